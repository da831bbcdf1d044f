{#
  Per-key order: decides which events this run may emit so that no record is
  emitted before an earlier record of the same input and Kafka key that is
  still pending, or that is emitted later in this run. Writes CTEs ending in
  `zync_final`: one row per pending record with the event that wants it
  (ordering, key, value__*, fields), `kept_by` (the ordering of the event
  that consumes it in this run, or null), `is_out` (it drives a kept event)
  and `expirable`. broadcast_claims: join the events' claims to the
  records as a broadcast, so records in one partition stay in it (a small
  run, zync_small_run).

  It works on one row per record, as a chain of windows: Spark inlines a CTE
  at every use, so joins back to `events` would multiply the plan.
  - a round marks an event late when one of its records has an earlier
    same-key record that is emitted later or never (an expirable record that
    no event takes is expired, and a record no rule can take is skipped, so
    neither holds anything back), and frees every
    record of a late event. A freed denorm partner may in turn hold back
    later records of its own key, so the rounds repeat (`rounds` times:
    zync_output_rows passes var('zync_order_rounds', 4); one round left
    every other key to the fallback below whenever any key cascaded, and a
    chain of same-key records then took one run per record);
  - if a violation is still left after that (a cascade deeper than
    `rounds`), the run falls back to the events whose every record has no
    earlier record of its key that could still be taken, which can never
    break the order; the rest waits for the next run.
#}
{% macro zync_keep_key_order(events, records, rounds=1, broadcast_claims=false) -%}
{%- set never = "named_struct('offset', 9223372036854775807, 'topic', '', 'partition', 0)" -%}
zync_claims as (
    select claimed.topic as claimed_topic, claimed.partition as claimed_partition, claimed.offset as claimed_offset, event.*
    from {{ events }} as event
    lateral view explode(event.consumed) claimed_records as claimed
),

zync_rows_0 as (
    select *, ordering as claimed_by_0, min(is_head) over (partition by ordering) as all_heads
    from (
        select {% if broadcast_claims %}/*+ BROADCAST(claim) */{% endif %}
            record.*,
            claim.*,
            -- no earlier record of its key that could still be taken
            coalesce(count(case when not record.skipped then 1 end) over (
                partition by record.topic, record.partition, record.key_json
                order by record.offset
                rows between unbounded preceding and 1 preceding
            ), 0) = 0 as is_head
        from {{ records }} as record
        left join zync_claims as claim
            on record.topic = claim.claimed_topic
            and record.partition = claim.claimed_partition
            and record.offset = claim.claimed_offset
    )
),
{%- for round in range(1, rounds + 2) %}

zync_rows_{{ round }} as (
    {%- if round <= rounds %}
    -- round {{ round }}: free every record of an event that is late
    select *, case when max(late_{{ round }}) over (partition by claimed_by_{{ round - 1 }}) then null else claimed_by_{{ round - 1 }} end as claimed_by_{{ round }}
    {%- else %}
    -- the check: is any event still late after {{ rounds }} rounds?
    select *, max(late_{{ round }}) over () as any_late
    {%- endif %}
    from (
        select *,
            claimed_by_{{ round - 1 }} is not null and max(coalesce(claimed_by_{{ round - 1 }}, case when not expirable and not skipped then {{ never }} end)) over (
                partition by topic, partition, key_json
                order by offset
                rows between unbounded preceding and 1 preceding
            ) > claimed_by_{{ round - 1 }} as late_{{ round }}
        from zync_rows_{{ round - 1 }}
    )
),
{%- endfor %}

zync_final as (
    select *, kept_by is not null and kept_by = named_struct('offset', offset, 'topic', topic, 'partition', partition) as is_out
    from (
        select *,
            case
                when any_late then case when all_heads then claimed_by_0 end
                else claimed_by_{{ rounds }}
            end as kept_by
        from zync_rows_{{ rounds + 1 }}
    )
)
{%- endmacro %}
