{% macro zync_mirror_name(mirror_relation) -%}
  {{ return(mirror_relation.schema ~ '.' ~ mirror_relation.identifier) }}
{%- endmacro %}
