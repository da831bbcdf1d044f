{#
  The next output offset, read from the output topic's cursor row when the
  statement runs (not when it is rendered), so that a run started after
  another committed numbers on from it.
#}
{% macro zync_next_output_offset(output_topic, state) -%}
{%- if state.incremental -%}
(select coalesce(max(kafka.offset), 0) from {{ this }} where kind = 'cursor' and kafka.topic = {{ zync_string(output_topic) }})
{%- else -%}
cast(0 as bigint)
{%- endif -%}
{%- endmacro %}
