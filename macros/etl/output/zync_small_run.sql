{#
  Whether this run is small enough to compute its decisions in one task:
  the pending records it cached (note 'pending_counts', left by
  zync_cache_pending) number at most var('zync_one_task_below', 100000).
  The per-key order and the rows after it are a chain of a dozen windows
  over different keys; over records spread across tasks each window is a
  shuffle, a stage of its own, while records in one partition satisfy every
  window's distribution and the chain runs as one stage (zync_records is
  coalesced to one partition, and zync_keep_key_order broadcasts the events'
  claims so that their join keeps it). `zync run`'s cycles see a few
  hundred records, and there the stages, not the rows, were the cost
  (39 stages for ~300 events, 22-26 in one task). A backfill of millions
  keeps its parallel plan. A render without a run (dbt compile, docs)
  leaves no note: not small.
#}
{% macro zync_small_run() -%}
{%- set pending = zync_take_note('pending_counts', keep=true) -%}
{{ return(pending is not none and pending | length > 0
          and pending.values() | sum <= var('zync_one_task_below', 100000) | int) }}
{%- endmacro %}
