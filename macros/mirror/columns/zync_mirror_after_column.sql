{#- The model's struct of value.after's fields when its columns are the default (compiler/mirrors.py AFTER_COLUMN). -#}
{% macro zync_mirror_after_column() -%}
  {{ return('_zync_after') }}
{%- endmacro %}
