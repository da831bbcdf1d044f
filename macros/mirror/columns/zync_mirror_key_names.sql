{#-
  The primary key's column names: the model's (its meta), else the default
  key's (zync_mirror_key_columns' names: every field of a record key, or
  `key`). Only the names: the materialization and the mirror's tests ask for
  them on every run, and typing the key's columns as the model's select does
  reads the raw table's field notes too, a statement more each time.
-#}
{% macro zync_mirror_key_names(source_relation, primary_key=none) -%}
  {%- if primary_key -%}
    {{ return(primary_key) }}
  {%- endif -%}
  {%- if not execute or not zync_mirror_column_type(source_relation, 'key').startswith('struct') -%}
    {{ return(['key']) }}
  {%- endif -%}
  {{ return(run_query('select `key`.* from ' ~ source_relation ~ ' limit 0').column_names | list) }}
{%- endmacro %}
