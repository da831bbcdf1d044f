{#
  The coordinates of every raw record of the transform's inputs, one
  union: `inputs` is [{topic, relation}] as the compiler writes it in the
  properties YAML. With `pending_in` (an output table), only the records
  pending for it (zync_stored_pending).
#}
{% macro zync_test_input_records(inputs, pending_in=none) -%}
{%- for input in inputs %}
select
    kafka.topic as input_topic,
    kafka.partition as input_partition,
    kafka.offset as input_offset,
    kafka.timestamp as input_timestamp
{%- if pending_in is none %}
from {{ input['relation'] }}
where kafka.topic = {{ dbt.string_literal(input['topic']) }}
{%- else %}
from (
    {{ zync_stored_pending(pending_in, input['relation'], input['topic']) | indent(4) }}
) as pending
{%- endif %}
{%- if not loop.last %}
union all
{% endif %}
{%- endfor %}
{%- endmacro %}
