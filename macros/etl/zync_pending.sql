{#
  The pending records of one input topic: its raw rows at or past the cursor
  that have no done row in this output table yet (zync's anti-join of the raw
  pool with the done records, limited to what is new or still pending).
  On the first run nothing is done, so every row is pending. Debezium's
  semantic types in `key` and `value` are typed (macros/debezium/), so the
  rules see a date as a date.

  When the output model runs, the same query is also cached, once, before
  the model's own statement is built (zync_cache_pending): Spark inlines a
  CTE at every reference, and the rules, per-key order and cursors refer to
  each input's pending records a dozen times, each a scan of the raw table
  and of the done rows. Spark's cache manager swaps the cached result in for
  every identical subquery, so the model's text stays what it reads as.
#}
{% macro zync_pending(relation, topic, state) -%}
{%- set pending_sql -%}
{%- set notes = zync_field_notes(relation) -%}
{%- if notes.names or notes.defaults %}
select
    {%- for column in adapter.get_columns_in_relation(relation) %}
    {%- if column.name | lower in ('key', 'value') %}
    {{ zync_typed_column(relation, column.name | lower, notes, alias='input') }} as {{ adapter.quote(column.name | lower) }}{{ "," if not loop.last }}
    {%- else %}
    input.{{ adapter.quote(column.name) }}{{ "," if not loop.last }}
    {%- endif %}
    {%- endfor %}
{%- else %}
select input.*
{%- endif %}
from {{ relation }} as input
{%- if state.incremental %}
left anti join (
    select kafka
    from {{ this }} as output
    where kind = 'done' and {{ zync_from_cursor('output', topic, state) }}
) as done
    on input.kafka.partition = done.kafka.partition
    and input.kafka.offset = done.kafka.offset
{%- endif %}
where {{ zync_from_cursor('input', topic, state) }}
{%- endset -%}
{%- do zync_cache_pending(topic, pending_sql) -%}
{{ pending_sql }}
{%- endmacro %}


{#
  Caches one input's pending records for the output model being run, as a
  session view zync_cache__<model>__<topic>__<time>, after dropping the ones
  earlier runs of this model left (no hook drops them after the run: a
  post-hook is skipped when the model fails, and a dbt thread's hook may
  outlive its connection when two in-process runs end together). Spark swaps
  a cached result in only for a query over the same table versions, so a
  cache left behind is never read in place of newer data; it lives at most
  until the next run of the model or the end of the Spark session (`zync run`
  clears the cache after each dbt run). The time in the name keeps two runs
  of one model in one session (threads) apart. Only `dbt run`/`dbt build`
  cache: compiling, `dbt docs generate` and a pending view render the query
  without running it. Off with var `zync_cache_pending: false`.
  Each input's count of pending records is left for the MERGE (note
  'pending_counts', {topic: count}): with none pending anywhere the model
  has no row to write, and zync_merge_sql skips the MERGE.
#}
{% macro zync_cache_pending(topic, pending_sql) -%}
{%- if execute and flags.WHICH in ('run', 'build') and model.config.materialized == 'incremental'
      and var('zync_cache_pending', true) -%}
    {%- set prefix = 'zync_cache__' ~ this.identifier ~ '__' ~ modules.re.sub('[^0-9A-Za-z_]', '_', topic) | lower ~ '__' -%}
    {%- for view in run_query("show views like '" ~ prefix ~ "*'") -%}
        {%- if view['isTemporary'] and view['viewName'].startswith(prefix) -%}
            {#- not `uncache table`: it analyzes the view again, which fails if its tables were dropped since -#}
            {%- do run_query('drop view if exists ' ~ view['viewName']) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set cached = prefix ~ modules.datetime.datetime.now().strftime('%H%M%S%f') -%}
    {%- do run_query('cache table ' ~ cached ~ ' as ' ~ pending_sql) -%}
    {%- set counts = zync_take_note('pending_counts', keep=true) or {} -%}
    {%- do counts.update({topic: run_query('select count(*) from ' ~ cached).rows[0][0] | int}) -%}
    {%- do zync_leave_note('pending_counts', counts) -%}
{%- endif -%}
{%- endmacro %}
