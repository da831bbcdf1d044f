{#
  What waits for an output and why, and what was given up (zync's
  pending.zed): one row per pending input record (zync_stored_pending:
  status 'pending'), and one per expired record (status 'expired'), with its
  coordinates, key and value as JSON, and how far behind its topic's newest
  record it is. `inputs` is a list of {'topic': ..., 'relation': ...}.
#}
{% macro zync_pending_report(output, inputs) -%}
with
{%- for input in inputs %}

input_{{ loop.index }} as (
    select
        records.kafka,
        to_json(named_struct('key', records.key)) as key_json,
        to_json(named_struct('value', records.value)) as value_json,
        records.status,
        latest.offset - records.kafka.offset as offsets_behind
    from (
        select pending.kafka, pending.key, pending.value, cast(null as string) as status
        from (
            {{ zync_stored_pending(output, input.relation, input.topic) | indent(12) }}
        ) as pending
        union all
        select raw.kafka, raw.key, raw.value, expired.status
        from {{ input.relation }} as raw
        inner join (
            select kafka, status from {{ output }}
            where kind = 'done' and status = 'expired' and kafka.topic = {{ zync_string(input.topic) }}
        ) as expired
            on raw.kafka.partition = expired.kafka.partition and raw.kafka.offset = expired.kafka.offset
        where raw.kafka.topic = {{ zync_string(input.topic) }}
    ) as records
    inner join (
        select kafka.partition, max(kafka.offset) as offset
        from {{ input.relation }}
        where kafka.topic = {{ zync_string(input.topic) }}
        group by kafka.partition
    ) as latest
        on records.kafka.partition = latest.partition
),
{%- endfor %}

records as (
    {%- for input in inputs %}
    select * from input_{{ loop.index }}
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
