{#-
  The field names of the raw table's Kafka key, or none when the key is not
  a record (or nothing runs). Read from the key's type (zync_struct_fields)
  in `raw_columns` (zync_mirror_raw_columns, described here when not given);
  Spark is asked for them only where that type cannot say.
-#}
{% macro zync_mirror_raw_key_names(source_relation, raw_columns=none) -%}
  {%- if not execute -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set key_type = (raw_columns if raw_columns is not none else zync_mirror_raw_columns(source_relation))['key'] -%}
  {%- if not key_type.lower().startswith('struct') -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set fields = zync_struct_fields(key_type) -%}
  {%- if fields is not none -%}
    {{ return(fields | map('first') | list) }}
  {%- endif -%}
  {{ return(run_query('select `key`.* from ' ~ source_relation ~ ' limit 0').column_names | list) }}
{%- endmacro %}
