{#
  The rest of the model after the rule CTEs and `events`: decides what this
  run emits and writes every row it appends, in one commit:
  - out rows: one per event kept, numbered on from the output topic's cursor
    (contiguous, no gaps, so egress can align them with Kafka's offsets),
    with the value's fields and the list of fields the row carries;
  - done rows: one per input record consumed ('processed') or given up
    ('expired');
  - cursor rows: per input topic/partition whose low-water mark moved, and
    one for the output topic holding its next offset.
  `events` is a relation with consumed, ordering, key, value__<field> for each
  of value_fields, and fields (null = tombstone). `inputs` as for zync_records.
  Called right after the last CTE, so it begins with a comma.
#}
{% macro zync_output_rows(events, inputs, output_topic, value_fields, state) -%}
,

-- every pending record of every input, once
zync_records as (
    {{ zync_records(inputs) | indent(4) }}
),

{{ zync_keep_key_order(events, 'zync_records') }},

-- per input topic/partition: the first record still pending, else past the last;
-- and (the grand total) the output topic's next offset
zync_cursors as (
    select
        case when grouping(topic) = 0 then named_struct(
            'topic', topic,
            'partition', partition,
            'offset', coalesce(min(case when kept_by is null and not expirable then offset end), max(offset) + 1)
        ) else named_struct(
            'topic', {{ zync_string(output_topic) }},
            'partition', 0,
            'offset', {{ zync_next_output_offset(output_topic, state) }} + count_if(is_out)
        ) end as kafka,
        grouping(topic) = 1 and count_if(is_out) = 0 as unmoved
    from zync_final
    group by grouping sets ((topic, partition), ())
)

select
    case when kind = 'out' then named_struct(
        'topic', {{ zync_string(output_topic) }},
        'partition', 0,
        'offset', {{ zync_next_output_offset(output_topic, state) }} + out_position - 1
    ) else named_struct('topic', topic, 'partition', partition, 'offset', offset) end as kafka,
    kind,
    case when kind = 'out' then key end as key,
    case when kind = 'out' and fields is not null then named_struct(
        {%- for field in value_fields %}
        '{{ field }}', {{ adapter.quote('value__' ~ field) }}{{ "," if not loop.last }}
        {%- endfor %}
    ) end as value,
    case when kind = 'out' then fields end as fields,
    case when kind = 'done' then (case when kept_by is not null then 'processed' else 'expired' end) end as status,
    '{{ invocation_id }}' as run_id
from (
    select *, row_number() over (partition by is_out order by ordering) as out_position
    from zync_final
    where kept_by is not null or expirable
)
lateral view explode(case when is_out then array('out', 'done') else array('done') end) kinds as kind

union all

select kafka, 'cursor', null, null, null, null, '{{ invocation_id }}'
from zync_cursors
where not unmoved
{%- set known = [] %}
{%- for topic, partitions in state.cursors | dictsort %}{% for partition, offset in partitions | dictsort %}
{%- do known.append("(kafka.topic = " ~ zync_string(topic) ~ " and kafka.partition = " ~ partition ~ " and kafka.offset = " ~ offset ~ ")") %}
{%- endfor %}{% endfor %}
{%- if known %}
    and not ({{ known | join(' or ') }})
{%- endif %}
{%- endmacro %}
