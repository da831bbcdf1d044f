{#
  The rows one run appends to the output table, all in one commit:
  - out rows: one per event, numbered on from the table's next output offset
    (contiguous, no gaps, so egress can align them with Kafka's offsets),
    with the value's fields and the list of fields the row carries;
  - done rows: one per input record consumed, status 'processed'.
  `events` is a relation of events with consumed, ordering, key,
  value__<field> for each of value_fields, and fields (null = tombstone).
#}
{% macro zync_output_rows(events, output_topic, value_fields) -%}
select
    named_struct(
        'topic', '{{ output_topic }}',
        'partition', 0,
        'offset', {{ zync_next_output_offset() }} + row_number() over (
            order by ordering.offset, ordering.topic, ordering.partition
        ) - 1
    ) as kafka,
    'out' as kind,
    key,
    case when fields is null then null else named_struct(
        {%- for field in value_fields %}
        '{{ field }}', {{ adapter.quote('value__' ~ field) }}{{ "," if not loop.last }}
        {%- endfor %}
    ) end as value,
    fields,
    cast(null as string) as status,
    '{{ invocation_id }}' as run_id
from {{ events }}

union all

select
    explode(consumed) as kafka,
    'done' as kind,
    null as key,
    null as value,
    null as fields,
    'processed' as status,
    '{{ invocation_id }}' as run_id
from {{ events }}
{%- endmacro %}
