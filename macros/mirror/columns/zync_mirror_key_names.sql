{#- The primary key's column names: the model's (its meta), else the default key's. -#}
{% macro zync_mirror_key_names(source_relation, primary_key=none) -%}
  {{ return(primary_key if primary_key else zync_mirror_key_columns(source_relation) | map('first') | list) }}
{%- endmacro %}
