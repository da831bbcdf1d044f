{#
  Per-key order: decides which events this run may emit, and in which
  order, so that no record is emitted before an earlier record of the same
  input and Kafka key that is still pending, or that is emitted later in
  this run. Writes CTEs ending in `zync_final`: one row per pending record
  with the event that wants it (ordering, key, value__*, fields), `kept_by`
  (the ordering of the event that consumes it in this run, or null),
  `out_tier` (out rows are numbered by out_tier, then ordering), `is_out` (it
  drives a kept event) and `expirable`. broadcast_claims: join the events'
  claims to the records as a broadcast, so records in one partition stay in
  it (a small run, zync_small_run). transactions: the events' ordering
  starts with their source transaction (zync_ordering), so claims compare
  transaction first: an output that takes whole transactions.

  It works on one row per record, as a chain of windows: Spark inlines a CTE
  at every use, so joins back to `events` would multiply the plan. Each
  record carries the claim of its event, struct<tier, ordering>: events are
  numbered by tier, then by their driving record's offset (zync's order).
  - a round finds the events that are late: one of their records has an
    earlier same-key record whose claim is higher (emitted later) or that is
    emitted never (an expirable record that no event takes is expired, and a
    record no rule can take is skipped, so neither holds anything back).
    An event behind a record emitted never is freed: its records wait for a
    later run, and a freed denorm partner may in turn hold back later
    records of its own key. An event behind a record emitted later moves to
    the tier after that record's event: it is emitted in this run, after
    it. That is the common case, because offsets of two inputs do not
    compare: a status update at InvoiceStatus offset 7 whose create is paired
    by an invoice at Invoices offset 9 comes after the pair, in the same
    run, where a second run with no new input would have put it.
  - the rounds repeat (`rounds` times: zync_output_rows passes
    var('zync_order_rounds', 4); one round left every other key to the
    fallback below whenever any key cascaded, and a chain of same-key
    records then took one run per record);
  - if a violation is still left after that (a cascade deeper than
    `rounds`), the run falls back to the events whose every record has no
    earlier record of its key that could still be taken, which can never
    break the order; the rest waits for the next run.
#}
{% macro zync_keep_key_order(events, records, rounds=1, broadcast_claims=false, transactions=false) -%}
{%- set last_transaction = "'transaction', named_struct('end', 9223372036854775807, 'id', '', 'order', 9223372036854775807), " if transactions else "" -%}
{%- set never = "named_struct('tier', 2147483647, 'ordering', named_struct(" ~ last_transaction ~ "'offset', 9223372036854775807, 'topic', '', 'partition', 0))" -%}
zync_claims as (
    select claimed.topic as claimed_topic, claimed.partition as claimed_partition, claimed.offset as claimed_offset, event.*
    from {{ events }} as event
    lateral view explode(event.consumed) claimed_records as claimed
),

zync_rows_0 as (
    select *,
        case when ordering is not null then named_struct('tier', 1, 'ordering', ordering) end as claimed_by_0,
        min(is_head) over (partition by ordering) as all_heads
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
    -- round {{ round }}: free every record of an event behind a record emitted never; move an event
    -- behind a record emitted later to the tier after that record's event
    select *,
        case
            when max(lost_{{ round }}) over (partition by ordering) then null
            when max(late_{{ round }}) over (partition by ordering) then named_struct(
                'tier', max(case when late_{{ round }} then before_{{ round }}.tier end) over (partition by ordering) + 1,
                'ordering', ordering)
            else claimed_by_{{ round - 1 }}
        end as claimed_by_{{ round }}
    {%- else %}
    -- the check: is any event still late after {{ rounds }} rounds?
    select *, max(late_{{ round }}) over () as any_late
    {%- endif %}
    from (
        select *,
            claimed_by_{{ round - 1 }} is not null and before_{{ round }} > claimed_by_{{ round - 1 }} as late_{{ round }},
            claimed_by_{{ round - 1 }} is not null and before_{{ round }} = {{ never }} as lost_{{ round }}
        from (
            select *,
                max(coalesce(claimed_by_{{ round - 1 }}, case when not expirable and not skipped then {{ never }} end)) over (
                    partition by topic, partition, key_json
                    order by offset
                    rows between unbounded preceding and 1 preceding
                ) as before_{{ round }}
            from zync_rows_{{ round - 1 }}
        )
    )
),
{%- endfor %}

zync_final as (
    select *, kept_by is not null and kept_by.offset = offset and kept_by.topic = topic and kept_by.partition = partition as is_out
    from (
        select *,
            case
                when any_late then case when all_heads then ordering end
                else claimed_by_{{ rounds }}.ordering
            end as kept_by,
            case when any_late then 1 else claimed_by_{{ rounds }}.tier end as out_tier
        from zync_rows_{{ rounds + 1 }}
    )
)
{%- endmacro %}
