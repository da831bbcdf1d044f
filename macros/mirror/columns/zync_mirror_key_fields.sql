{#- The default primary key in the model's select: `key`.`f` as `f`, ... (zync_mirror_key_columns). -#}
{% macro zync_mirror_key_fields(source_relation) -%}
  {%- set projection = [] -%}
  {%- for name, expression in zync_mirror_key_columns(source_relation) -%}
    {%- do projection.append(expression ~ ' as ' ~ adapter.quote(name)) -%}
  {%- endfor -%}
  {{ return(projection | join(',\n    ')) }}
{%- endmacro %}
