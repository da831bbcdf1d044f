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
  {%- set names = zync_take_note('mirror_key_names') if model.resource_type == 'model' else none -%}
  {%- if names is none -%}
    {%- set names = zync_mirror_raw_key_names(source_relation) -%}
  {%- endif -%}
  {{ return(names if names is not none else ['key']) }}
{%- endmacro %}
