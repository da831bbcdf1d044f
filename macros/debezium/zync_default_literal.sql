{#- An Avro field default (boolean, number or string) as a Spark SQL literal. -#}
{% macro zync_default_literal(value) -%}
  {%- if value is boolean -%}
    {{ return('true' if value else 'false') }}
  {%- elif value is number -%}
    {{ return(value | string) }}
  {%- endif -%}
  {{ return("'" ~ (value | string | replace("\\", "\\\\") | replace("'", "\\'")) ~ "'") }}
{%- endmacro %}
