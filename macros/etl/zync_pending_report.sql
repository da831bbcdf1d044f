{#
  What waits for an output and why, and what was given up (zync's
  pending.zed): one row per input record past the cursor without a done row
  (status 'pending'), and one per expired record (status 'expired'), with its
  coordinates, key and value as JSON, and how far behind its topic's newest
  record it is. `inputs` is a list of {'topic': ..., 'relation': ...}.
#}
{% macro zync_pending_report(output, inputs) -%}
with
{%- for input in inputs %}

input_{{ loop.index }} as (
    select
        raw.kafka,
        to_json(named_struct('key', raw.key)) as key_json,
        to_json(named_struct('value', raw.value)) as value_json,
        done.status,
        max(raw.kafka.offset) over (partition by raw.kafka.partition) - raw.kafka.offset as offsets_behind
    from {{ input.relation }} as raw
    left join (
        select kafka.partition, max(kafka.offset) as offset
        from {{ output }}
        where kind = 'cursor' and kafka.topic = {{ zync_string(input.topic) }}
        group by kafka.partition
    ) as cursors
        on raw.kafka.partition = cursors.partition
    left join (
        select kafka, status from {{ output }} where kind = 'done' and kafka.topic = {{ zync_string(input.topic) }}
    ) as done
        on raw.kafka.partition = done.kafka.partition and raw.kafka.offset = done.kafka.offset
    where raw.kafka.topic = {{ zync_string(input.topic) }}
        and (raw.kafka.offset >= coalesce(cursors.offset, 0) or done.status = 'expired')
),
{%- endfor %}

records as (
    {%- for input in inputs %}
    select * from input_{{ loop.index }} where status is null or status = 'expired'
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
)

select
    kafka,
    coalesce(status, 'pending') as status,
    case
        when status = 'expired' then 'expired: pending longer than its expire-after allows'
        when earlier_offset is not null then concat('waits for offset ', earlier_offset, ' with the same key')
        else 'waits for its denorm partner (or, after a per-key order cascade deeper than var zync_order_rounds, for the next run)'
    end as reason,
    key_json,
    value_json,
    offsets_behind
from (
    select
        *,
        min(case when status is null then kafka.offset end) over (
            partition by kafka.topic, kafka.partition, key_json
            order by kafka.offset
            rows between unbounded preceding and 1 preceding
        ) as earlier_offset
    from records
)
{%- endmacro %}
