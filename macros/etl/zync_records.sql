{#
  One row per pending record of every input, for the decisions that span
  rules: per-key order, expiry, skipping and the new cursors. `inputs` is a
  list of {'cte': name, 'expire_after': none | {'offsets': N} | {'seconds': S}};
  each CTE holds one input's pending records with a boolean column
  zync_takeable, true when some rule could take the record (the model
  computes it from the rules' `where`s and join keys).
  key_json identifies the record's Kafka key exactly (any key type);
  `skipped` marks a record no rule can ever take (a tombstone, say) or a
  replay (zync_replays; `replayed` tells it apart): it is done at once, so
  it never holds back its key or the cursor.
#}
{% macro zync_records(inputs) -%}
{%- for input in inputs %}
select
    kafka.topic,
    kafka.partition,
    kafka.offset,
    to_json(named_struct('k', key)) as key_json,
    {{ zync_expirable(input.expire_after) }} as expirable,
    zync_replay_of is not null or not zync_takeable as skipped,
    zync_replay_of is not null as replayed
from {{ input.cte }} as in_record
{%- if not loop.last %}
union all
{%- endif %}
{%- endfor %}
{%- endmacro %}


{#
  Whether a pending record may expire: `expire-after` newer records (offsets)
  or a span of Kafka time (seconds) lie between it and the newest pending
  record of its topic/partition. Measured in the stream's own time, not the
  wall clock, so that a replay of the same history decides the same way.
#}
{% macro zync_expirable(expire_after) -%}
{%- if expire_after is none -%}
false
{%- elif 'offsets' in expire_after -%}
kafka.offset + {{ expire_after.offsets | int }} <= max(kafka.offset) over (partition by kafka.partition)
{%- else -%}
unix_micros(kafka.timestamp) + {{ (expire_after.seconds * 1000000) | int }} <= max(unix_micros(kafka.timestamp)) over (partition by kafka.partition)
{%- endif -%}
{%- endmacro %}
