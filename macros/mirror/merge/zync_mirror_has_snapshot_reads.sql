{#- Whether the changes past the cursor hold any snapshot read (r): only then is the raw history consulted. -#}
{% macro zync_mirror_has_snapshot_reads(rows, after) -%}
  {%- if not execute -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set probe -%}
    select 1 from {{ rows }}
    where `_zync_op` = 'r'
    {%- if after %} and ({{ after }}){% endif %}
    limit 1
  {%- endset -%}
  {{ return(run_query(probe).rows | length > 0) }}
{%- endmacro %}
