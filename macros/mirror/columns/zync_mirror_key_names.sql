{#-
  The primary key's column names: the model's (its meta), else the default
  key's (zync_mirror_key_columns' names: every field of a record key, or
  `key`). A mirror's materialization takes the names its select was rendered
  with (zync_mirror_key_fields leaves them): the same names, without asking
  the raw table again. Otherwise (the mirror's tests, a model written by
  hand) only the names are read: typing the key's columns as the model's
  select does reads the raw table's field notes too, a statement more.
-#}
{% macro zync_mirror_key_names(source_relation, primary_key=none) -%}
  {%- if primary_key -%}
    {{ return(primary_key) }}
  {%- endif -%}
  {%- if execute and model.resource_type == 'model' and flags.WHICH in ('run', 'build') -%}
    {%- set rendered = zync_take_note('mirror_key_names') -%}
    {%- if rendered -%}
      {{ return(rendered) }}
    {%- endif -%}
  {%- endif -%}
  {%- if not execute or not zync_mirror_column_type(source_relation, 'key').startswith('struct') -%}
    {{ return(['key']) }}
  {%- endif -%}
  {{ return(run_query('select `key`.* from ' ~ source_relation ~ ' limit 0').column_names | list) }}
{%- endmacro %}
