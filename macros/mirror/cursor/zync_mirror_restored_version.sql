{#
  The version a RESTORE commit (a `describe history` row) went back to; none
  if restored by timestamp. dbt hands map columns over as JSON text.
#}
{% macro zync_mirror_restored_version(history_row) -%}
  {%- set parameters = history_row['operationParameters'] -%}
  {%- set parameters = fromjson(parameters, none) if parameters is string else parameters -%}
  {%- set version = parameters.get('version') if parameters is mapping else none -%}
  {{ return(version | int if version is not none and version | string | trim | length > 0 else none) }}
{%- endmacro %}
