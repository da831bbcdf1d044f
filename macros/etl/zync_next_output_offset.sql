{#
  The output offset the next out row gets: one past the largest so far,
  0 on the first run.
#}
{% macro zync_next_output_offset() -%}
{%- if is_incremental() -%}
(select coalesce(max(kafka.offset) + 1, 0) from {{ this }} where kind = 'out')
{%- else -%}
cast(0 as bigint)
{%- endif -%}
{%- endmacro %}
