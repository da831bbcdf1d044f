{#- The Spark type (as text) of one top-level column of a relation. -#}
{% macro zync_mirror_column_type(relation, name) -%}
  {%- for column in adapter.get_columns_in_relation(relation) if column.name | lower == name -%}
    {{ return(column.data_type | lower) }}
  {%- endfor -%}
  {%- do exceptions.raise_compiler_error(relation ~ " has no `" ~ name ~ "` column: is it a raw table written by `zync from-kafka`?") -%}
{%- endmacro %}
