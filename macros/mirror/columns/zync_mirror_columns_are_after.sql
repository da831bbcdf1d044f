{#- Whether the value columns come from value.after's fields (the default): their Avro defaults then apply. -#}
{% macro zync_mirror_columns_are_after(columns) -%}
  {%- set prefix = adapter.quote(zync_mirror_after_column()) ~ '.' -%}
  {{ return(columns | length > 0 and columns[0].expression.startswith(prefix)) }}
{%- endmacro %}
