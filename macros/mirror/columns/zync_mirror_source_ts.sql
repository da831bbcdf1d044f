{#
  The default source time of a change, for the re-snapshot guard:
  Debezium's `value`.`source`.`ts_ms` (when the change was made in the
  database), or the envelope's `value`.`ts_ms`, or null when neither exists.
#}
{% macro zync_mirror_source_ts(source_relation) -%}
  {%- if not execute -%}
    {{ return('null') }}
  {%- endif -%}
  {%- set value_fields = run_query('select `value`.* from ' ~ source_relation ~ ' limit 0').column_names | map('lower') | list -%}
  {%- if 'source' in value_fields -%}
    {%- set source_fields = run_query('select `value`.`source`.* from ' ~ source_relation ~ ' limit 0').column_names | map('lower') | list -%}
    {%- if 'ts_ms' in source_fields -%}
      {{ return('`value`.`source`.`ts_ms`') }}
    {%- endif -%}
  {%- endif -%}
  {{ return('`value`.`ts_ms`' if 'ts_ms' in value_fields else 'null') }}
{%- endmacro %}
