{#
  The default primary key in the model's select: `key`.`f` as `f`, ...
  (zync_mirror_key_columns). The names are left for the model's
  materialization (zync_mirror_key_names), which would otherwise ask the
  raw table for them again, two statements more in every run.
#}
{% macro zync_mirror_key_fields(source_relation, notes=none, raw_columns=none) -%}
  {%- set columns = zync_mirror_key_columns(source_relation, notes, raw_columns) -%}
  {%- set projection = [] -%}
  {%- for name, expression in columns -%}
    {%- do projection.append(expression ~ ' as ' ~ adapter.quote(name)) -%}
  {%- endfor -%}
  {%- do zync_leave_note('mirror_key_names', columns | map('first') | list) -%}
  {{ return(projection | join(',\n    ')) }}
{%- endmacro %}
