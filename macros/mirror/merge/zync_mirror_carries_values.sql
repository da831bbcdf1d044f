{#- The changes' flag (soft mode, incremental runs) of a delete carrying its key's values from an earlier change in the same run; never a mirror column. -#}
{% macro zync_mirror_carries_values() -%}
  {{ return('_zync_carries_values') }}
{%- endmacro %}
