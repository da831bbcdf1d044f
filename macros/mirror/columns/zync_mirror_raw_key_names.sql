{#-
  The field names of the raw table's Kafka key, or none when the key is not
  a record (or nothing runs). Read from the key's type in `raw_columns`
  (zync_mirror_raw_columns, described here when not given) where it can say
  (zync_mirror_struct_fields).
-#}
{% macro zync_mirror_raw_key_names(source_relation, raw_columns=none) -%}
  {%- if not execute -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set key_type = (raw_columns if raw_columns is not none else zync_mirror_raw_columns(source_relation))['key'] -%}
  {%- if not key_type.lower().startswith('struct') -%}
    {{ return(none) }}
  {%- endif -%}
  {{ return(zync_mirror_struct_fields(source_relation, '`key`', key_type) | map('first') | list) }}
{%- endmacro %}
