{#
  Per-key order: decides which events this run may emit so that no record is
  emitted before an earlier record of the same input and Kafka key that is
  still pending, or that is emitted later in this run. Writes CTEs ending in
  `zync_final`: one row per pending record with the event that wants it
  (ordering, key, value__*, fields), `kept_by` (the ordering of the event
  that consumes it in this run, or null), `out_tier` (the tier that kept it,
  below), `is_out` (it drives a kept event) and `expirable`.
  broadcast_claims: join the events' claims to the records as a broadcast,
  so records in one partition stay in it (a small run, zync_small_run).

  It works on one row per record, as a chain of windows: Spark inlines a CTE
  at every use, so joins back to `events` would multiply the plan.
  - a round marks an event late when one of its records has an earlier
    same-key record that is emitted later or never (an expirable record that
    no event takes is expired, and a record no rule can take is skipped, so
    neither holds anything back), and frees every record of a late event. A
    freed denorm partner may in turn hold back later records of its own key,
    so the rounds repeat (`rounds` times: zync_output_rows passes
    var('zync_order_rounds', 4); one round left every other key to the
    fallback below whenever any key cascaded, and a chain of same-key
    records then took one run per record);
  - if a violation is still left after that (a cascade deeper than
    `rounds`), the tier falls back to the events whose every record has no
    earlier record of its key that could still be taken, which can never
    break the order.
  - tiers: what a tier leaves late is decided again by the next tier, with
    every record the tiers before it took (or expired, or skipped) counted
    as done, and the next tier's events numbered after theirs. Events are
    numbered by their driving record's offset, and offsets of different
    inputs do not compare: a status update (InvoiceStatus offset 7) whose
    create is paired by an invoice at Invoices offset 9 is late in the first
    tier. The second tier emits it after the pair, in the same run, exactly
    where a second run with no new input would have put it (an event
    holding a record the first tier expired waits: a later run pairs anew).
    `tiers` is var('zync_order_tiers', 2). The tiers after the first have
    `later_rounds` rounds (default none: the check, then its fallback, which
    keeps what the common case needs, an update whose earlier record the
    first tier took). Every window costs each run planning and a pass over
    its records, and Spark's analyzer gives up on a chain much deeper ("Max
    iterations (100) reached for batch Resolution" with four rounds in the
    second tier). What is late after the last tier waits for the next run,
    which `zync run` and `--once` start at once.
#}
{% macro zync_keep_key_order(events, records, rounds=1, broadcast_claims=false, tiers=2, later_rounds=0) -%}
zync_claims as (
    select claimed.topic as claimed_topic, claimed.partition as claimed_partition, claimed.offset as claimed_offset, event.*
    from {{ events }} as event
    lateral view explode(event.consumed) claimed_records as claimed
),

zync_tier_1_0 as (
    select *, ordering as t1_claim_0, min(t1_is_head) over (partition by ordering) as t1_all_heads
    from (
        select {% if broadcast_claims %}/*+ BROADCAST(claim) */{% endif %}
            record.*,
            claim.*,
            -- no earlier record of its key that could still be taken
            {{ zync_no_earlier_record('not record.skipped', 'record.') }} as t1_is_head
        from {{ records }} as record
        left join zync_claims as claim
            on record.topic = claim.claimed_topic
            and record.partition = claim.claimed_partition
            and record.offset = claim.claimed_offset
    )
),
{{ zync_order_rounds(1, rounds, 'not expirable and not skipped') }},
{%- for tier in range(2, tiers + 1) %}
{%- set done_before = zync_done_before(tier) %}

-- tier {{ tier }}: the events tier {{ tier - 1 }} left late, with what the tiers before took counted as done
zync_tier_{{ tier }}_0 as (
    select *,
        case when t{{ tier }}_open then ordering end as t{{ tier }}_claim_0,
        min(t{{ tier }}_is_head) over (partition by ordering) as t{{ tier }}_all_heads
    from (
        select *,
            -- every record of the event is still pending
            min(not ({{ done_before }})) over (partition by ordering) as t{{ tier }}_open,
            {{ zync_no_earlier_record('not (' ~ done_before ~ ')') }} as t{{ tier }}_is_head
        from zync_tier_{{ tier - 1 }}
    )
),
{{ zync_order_rounds(tier, later_rounds, 'not (' ~ done_before ~ ')') }},
{%- endfor %}

zync_final as (
    select *, kept_by is not null and kept_by = named_struct('offset', offset, 'topic', topic, 'partition', partition) as is_out
    from (
        select *,
            coalesce({% for tier in range(1, tiers + 1) %}t{{ tier }}_kept_by{{ ", " if not loop.last }}{% endfor %}) as kept_by,
            case
                {%- for tier in range(1, tiers + 1) %}
                when t{{ tier }}_kept_by is not null then {{ tier }}
                {%- endfor %}
            end as out_tier
        from zync_tier_{{ tiers }}
    )
)
{%- endmacro %}


{#
  The rounds of one tier (see zync_keep_key_order), from CTE zync_tier_<tier>_0
  with t<tier>_claim_0 (the ordering of the event claiming the record, null
  for none) and t<tier>_all_heads, to CTE zync_tier_<tier> with
  t<tier>_kept_by. `pending` is true for a record that holds its key back
  when no event of this tier takes it.
#}
{% macro zync_order_rounds(tier, rounds, pending) -%}
{%- set never = "named_struct('offset', 9223372036854775807, 'topic', '', 'partition', 0)" -%}
{%- set t = 't' ~ tier -%}
{%- for round in range(1, rounds + 2) %}

zync_tier_{{ tier }}_{{ round }} as (
    {%- if round <= rounds %}
    -- round {{ round }}: free every record of an event that is late
    select *, case when max({{ t }}_late_{{ round }}) over (partition by {{ t }}_claim_{{ round - 1 }}) then null else {{ t }}_claim_{{ round - 1 }} end as {{ t }}_claim_{{ round }}
    {%- else %}
    -- the check: is any event still late after {{ rounds }} rounds?
    select *, max({{ t }}_late_{{ round }}) over () as {{ t }}_any_late
    {%- endif %}
    from (
        select *,
            {{ t }}_claim_{{ round - 1 }} is not null and max(coalesce({{ t }}_claim_{{ round - 1 }}, case when {{ pending }} then {{ never }} end)) over (
                partition by topic, partition, key_json
                order by offset
                rows between unbounded preceding and 1 preceding
            ) > {{ t }}_claim_{{ round - 1 }} as {{ t }}_late_{{ round }}
        from zync_tier_{{ tier }}_{{ round - 1 }}
    )
),
{%- endfor %}

zync_tier_{{ tier }} as (
    select *,
        case
            when {{ t }}_any_late then case when {{ t }}_all_heads then {{ t }}_claim_0 end
            else {{ t }}_claim_{{ rounds }}
        end as {{ t }}_kept_by
    from zync_tier_{{ tier }}_{{ rounds + 1 }}
)
{%- endmacro %}


{# Whether no earlier record of the same input and key (a window over the records) is `counted`. #}
{% macro zync_no_earlier_record(counted, alias='') -%}
coalesce(count(case when {{ counted }} then 1 end) over (
                partition by {{ alias }}topic, {{ alias }}partition, {{ alias }}key_json
                order by {{ alias }}offset
                rows between unbounded preceding and 1 preceding
            ), 0) = 0
{%- endmacro %}


{# Whether a record is done before tier `tier`: an earlier tier took it, or it expires or is skipped anyway. #}
{% macro zync_done_before(tier) -%}
{%- for earlier in range(1, tier) %}t{{ earlier }}_kept_by is not null or {% endfor %}expirable or skipped
{%- endmacro %}
