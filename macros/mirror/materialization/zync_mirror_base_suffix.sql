{#- The suffix of a mirror's base table's name (zync_mirror_base_relation); service/project.py knows it too. -#}
{% macro zync_mirror_base_suffix() -%}
  {{ return('__base') }}
{%- endmacro %}
