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
