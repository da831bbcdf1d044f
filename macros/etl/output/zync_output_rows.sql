{#
  The rest of the model after the rule CTEs and `events`: decides what this
  run emits and writes every row it appends, in one commit:
  - out rows: one per event kept, numbered on from the output topic's cursor
    (contiguous, no gaps, so egress can align them with Kafka's offsets),
    with the value's fields and the list of fields the row carries;
  - done rows: one per input record consumed ('processed'), given up
    ('expired'), that no rule can take ('skipped': a tombstone, an op no
    rule admits), or that replays an earlier record ('replayed': Debezium
    sent the same change again, zync_replays);
  - cursor rows: per input topic/partition whose low-water mark moved, and
    one for the output topic holding its next offset.
  `events` is a relation with consumed, ordering, key, value__<field> for each
  of value_fields, and fields (null = tombstone). `inputs` as for zync_records.
  Writes CTEs (after the model's own, which end with a comma) ending in
  `zync_output_rows`: kafka, kind, key, value__<field>..., fields (null but
  for an out row that carries a value), status, run_id (and transaction). The model's final
  select builds each out row's value from the value__ columns.
  transactions: the connector's transaction topic, for an output that takes
  whole source transactions (every input reads at that connector's cut; the
  events' ordering starts with their source transaction, zync_ordering): out
  rows are numbered transaction by transaction, and each carries its
  transaction's id in `transaction`. A cursor row of the transaction topic
  (partition 0) then holds the lowest END among the transactions of the
  records this run started with pending (zync_cache_pending finds it as it
  counts them), so the next run looks up only the ENDs from there
  (zync_transaction_ends); with the cache off, the cursor stays.
#}
{% macro zync_output_rows(events, inputs, output_topic, value_fields, state, transactions=none) -%}
{%- set ends = ((zync_take_note('transaction_ends') or {}) if transactions else {}).values() | reject('none') | list -%}
{%- set transactions_cursor = ends | min if ends else none -%}
{%- set known_cursor = state.cursors.get(transactions, {}).get(0) if transactions else none -%}
{%- set move_transactions_cursor = transactions_cursor is not none and (known_cursor is none or transactions_cursor > known_cursor) -%}
-- every pending record of every input, once
{%- set small = zync_small_run() %}
zync_records as (
    {%- if small %}
    select /*+ COALESCE(1) */ * from (
        {{ zync_records(inputs) | indent(8) }}
    ) as records
    {%- else %}
    {{ zync_records(inputs) | indent(4) }}
    {%- endif %}
),

{{ zync_keep_key_order(events, 'zync_records', rounds=var('zync_order_rounds', 4) | int, broadcast_claims=small,
                       transactions=transactions is not none) }},

-- one pass over the records writes every row: Spark would compute zync_final
-- again for a second reference
zync_emitted as (
    select
        *,
        row_number() over (partition by is_out order by out_tier, ordering) as out_position,
        count(*) over (partition by is_out) as out_count,
        -- the new low-water mark: the first record still pending, else past the last
        coalesce(
            min(case when kept_by is null and not expirable and not skipped then offset end) over (partition by topic, partition),
            max(offset) over (partition by topic, partition) + 1
        ) as cursor_offset,
        row_number() over (partition by topic, partition order by offset) = 1 as is_first
    from zync_final
),

-- every row this run appends; the model's final select builds the out rows' values
zync_output_rows as (
    select
        case
            when kind = 'out' then named_struct(
                'topic', {{ zync_string(output_topic) }}, 'partition', 0,
                'offset', {{ zync_next_output_offset(output_topic, state) }} + out_position - 1)
            when kind = 'output_cursor' then named_struct(
                'topic', {{ zync_string(output_topic) }}, 'partition', 0,
                'offset', {{ zync_next_output_offset(output_topic, state) }} + out_count)
            when kind = 'cursor' then named_struct('topic', topic, 'partition', partition, 'offset', cursor_offset)
            {%- if move_transactions_cursor %}
            when kind = 'transactions_cursor' then named_struct(
                'topic', {{ zync_string(transactions) }}, 'partition', 0, 'offset', {{ transactions_cursor }})
            {%- endif %}
            else named_struct('topic', topic, 'partition', partition, 'offset', offset)
        end as kafka,
        case when kind in ('output_cursor', 'transactions_cursor') then 'cursor' else kind end as kind,
        case when kind = 'out' then key end as key,
        {%- for field in value_fields %}
        {{ adapter.quote('value__' ~ field) }},
        {%- endfor %}
        -- a field holding Debezium's unavailable-value placeholder (an unchanged TOASTed column) is left
        -- out, so the sink keeps that column as it is (macros/debezium/zync_unavailable.sql)
        case when kind = 'out' then filter(fields, field -> not coalesce(
            case field
                {%- for field in value_fields %}
                when '{{ field }}' then to_json(named_struct('v', {{ adapter.quote('value__' ~ field) }}))
                {%- endfor %}
            end in ({{ zync_unavailable_as_json() }}), false)) end as fields,
        case when kind = 'done' then (
            case when kept_by is not null then 'processed' when replayed then 'replayed' when skipped then 'skipped' else 'expired' end
        ) end as status,
        '{{ invocation_id }}' as run_id
        {%- if transactions %},
        case when kind = 'out' then ordering.`transaction`.id end as `transaction`
        {%- endif %}
    from zync_emitted
    lateral view explode(filter(
        array(
            case when is_out then 'out' end,
            case when kept_by is not null or expirable or skipped then 'done' end,
            case when is_first and {{ zync_cursor_moved('topic', 'partition', 'cursor_offset', state) }} then 'cursor' end,
            case when is_out and out_position = out_count then 'output_cursor' end
            {%- if move_transactions_cursor %},
            case when is_out and out_position = out_count then 'transactions_cursor' end
            {%- endif %}
        ),
        kind -> kind is not null
    )) kinds as kind
)
{%- endmacro %}
