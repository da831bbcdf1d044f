{#
  The pending records of one input topic: its raw rows at or past the cursor
  that have no done row in this output table yet (zync's anti-join of the raw
  pool with the done records, limited to what is new or still pending).
  On the first run nothing is done, so every row is pending. Debezium's
  semantic types in `key` and `value` are typed (macros/debezium/), so the
  rules see a date as a date; with `reads` (the field paths the rules read,
  which `zync etl compile` lists) only those are, the other fields are
  carried as written (zync_notes_read). Each row carries `zync_replay_of`: the offset
  of the earlier record it replays, or null (zync_replays); rules leave
  replays alone and the model marks them done as `replayed`.

  When the output model runs, the same query is also cached, once, before
  the model's own statement is built (zync_cache_pending): Spark inlines a
  CTE at every reference, and the rules, per-key order and cursors refer to
  each input's pending records a dozen times, each a scan of the raw table
  and of the done rows. Spark's cache manager swaps the cached result in for
  every identical subquery, so the model's text stays what it reads as.
#}
{% macro zync_pending(relation, topic, state, reads=none) -%}
{%- set pending_sql -%}
{%- set notes = zync_field_notes(relation) -%}
{%- if reads is not none -%}{%- set notes = zync_notes_read(notes, reads) -%}{%- endif -%}
{%- if notes.names or notes.defaults %}
select
    {%- for column in adapter.get_columns_in_relation(relation) %}
    {%- if column.name | lower in ('key', 'value') %}
    {{ zync_typed_column(relation, column.name | lower, notes, alias='input') }} as {{ adapter.quote(column.name | lower) }},
    {%- else %}
    input.{{ adapter.quote(column.name) }},
    {%- endif %}
    {%- endfor %}
    input.zync_replay_of
{%- else %}
select input.*
{%- endif %}
from (
    {{ zync_replays(relation, topic, state) | indent(4) }}
) as input
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
  Replays: Debezium delivers at least once, and a Connect task that dies
  before its offsets are committed sends its last changes again (the same
  bytes at new offsets). Such a record must not take part in an event
  again: a replayed create whose original was paired would wait forever for
  a partner, and hold back every later record of its key.

  Selects the raw rows of `relation` from `var('zync_replay_window', 10000)`
  offsets below the cursors on, with `zync_replay_of`: the offset of the
  latest earlier record of the same partition, at most that many offsets
  before it, whose key and value are equal, else null. Only values that
  carry Debezium's source position (a non-null `value.source`: the LSN, the
  transaction and ts_ms of the change) are compared, since two distinct
  changes then never have equal values and a replay always does; a stream
  without it (hand-made records) may repeat a record on purpose, and its
  records are never replays. Equality is on the JSON of the decoded key and
  value (map columns are not comparable in Spark), through its SHA-256
  digest; a record without a source position gets its own offset as the
  digest, so it matches nothing.
  The window bounds a run's cost: it reads at most that many offsets more
  than what is new or pending (literal bounds, so Delta skips the files
  below them). A replay arriving further behind its original is processed
  like any record. `zync_replay_window: 0` turns this off.
#}
{% macro zync_replays(relation, topic, state) -%}
{%- set window = var('zync_replay_window', 10000) | int -%}
{%- if window > 0 -%}
{%- set json = "to_json(named_struct('k', raw.key, 'v', raw.value))" -%}
select
    raw.*,
    max(raw.kafka.offset) over (
        partition by raw.kafka.partition,
            case when get_json_object({{ json }}, '$.v.source') is not null then sha2({{ json }}, 256)
                 else cast(raw.kafka.offset as string) end
        order by raw.kafka.offset
        range between {{ window }} preceding and 1 preceding
    ) as zync_replay_of
from {{ relation }} as raw
where {{ zync_from_cursor('raw', topic, state, back=window) }}
{%- else -%}
select raw.*, cast(null as bigint) as zync_replay_of
from {{ relation }} as raw
{%- endif -%}
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
  Each input's count of pending records is left for the write (note
  'pending_counts', {topic: count}): with none pending anywhere the model
  has no row to write, and zync_output_insert_sql writes nothing; and the
  cached view's name (note 'pending_views', {topic: view}), whose records
  its guard checks no other run has done since.
#}
{% macro zync_cache_pending(topic, pending_sql) -%}
{%- if execute and flags.WHICH in ('run', 'build') and model.config.materialized in ('zync_output', 'incremental')
      and var('zync_cache_pending', true) -%}
    {%- set prefix = 'zync_cache__' ~ this.identifier ~ '__' ~ modules.re.sub('[^0-9A-Za-z_]', '_', topic) | lower ~ '__' -%}
    {%- for view in run_query("show views like '" ~ prefix ~ "*'") -%}
        {%- if view['isTemporary'] and view['viewName'].startswith(prefix) -%}
            {#- not `uncache table`: it analyzes the view again, which fails if its tables were dropped since -#}
            {%- do zync_execute('drop view if exists ' ~ view['viewName']) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set cached = prefix ~ modules.datetime.datetime.now().strftime('%H%M%S%f') -%}
    {%- do zync_execute('cache table ' ~ cached ~ ' as ' ~ pending_sql) -%}
    {%- set counts = zync_take_note('pending_counts', keep=true) or {} -%}
    {%- do counts.update({topic: run_query('select count(*) from ' ~ cached).rows[0][0] | int}) -%}
    {%- do zync_leave_note('pending_counts', counts) -%}
    {%- set views = zync_take_note('pending_views', keep=true) or {} -%}
    {%- do views.update({topic: cached}) -%}
    {%- do zync_leave_note('pending_views', views) -%}
{%- endif -%}
{%- endmacro %}
