{#- The raw table a mirror model reads: its one source() (which its select may name more than once). -#}
{% macro zync_mirror_source() -%}
  {%- set first = model.sources[0] if model.sources else none -%}
  {%- if first is none or model.sources | reject('equalto', first) | list | length > 0 -%}
    {%- do exceptions.raise_compiler_error("mirror model " ~ model.name ~ " must read exactly one source (its raw table)") -%}
  {%- endif -%}
  {{ return(source(first[0], first[1])) }}
{%- endmacro %}
