{#
  How a zync output model appends its rows: a MERGE that inserts them all in
  one commit and refuses any that is already there.

  A blind append would let two `dbt run`s of the same model at once both
  commit the same records. A MERGE reads the table, so Delta fails the
  second of two concurrent writers (ConcurrentAppendException: "Files were
  added ... by a concurrent update"); a run that read an older state and
  starts after another committed matches that run's rows and stops with the
  message below. Either way the failed run wrote nothing: run it again.

  Only done rows are matched: every run that writes anything writes a done
  row for each record it consumed (out rows and cursor moves come only with
  them), so two runs that collide always collide on done rows. Matching
  nothing else keeps the target-side condition one partition (`kind`) and
  one predicate on kafka.* from the input cursors on, which Delta prunes by
  partition and file statistics: the MERGE reads the done files at or past
  the cursors, never the out rows or the history below. (A disjunction over
  kinds, as this macro first had, mixes a partition column with data
  columns and makes Delta read every file.) The cursors are those the rows
  were rendered from (zync_rendered_state), never newer ones: a run that
  committed since moved the cursors past the very done rows this run would
  collide with (a first version read them afresh here and wrote a hand-run
  `dbt run`'s records a second time beside `zync run`).

  When the model's render counted no pending record in any input
  (zync_cache_pending), the model has no row to write: every row it writes
  is for a pending record. Then the statement is a select of nothing,
  sparing a MERGE that costs seconds over an empty source (6.3 s of a
  warm 11.6 s run of the demo's model with nothing new).

  Models without meta.zync_output_topic get dbt-spark's own MERGE.
#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) -%}
  {%- set output_topic = (config.get('meta') or {}).get('zync_output_topic') -%}
  {%- if output_topic -%}
    {{ zync_merge_sql(target, source, output_topic) }}
  {%- else -%}
    {{ dbt_spark.spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) }}
  {%- endif -%}
{%- endmacro %}


{% macro zync_merge_sql(target, source, output_topic) -%}
{%- set state = zync_rendered_state() -%}
{%- set pending = zync_take_note('pending_counts') -%}
{%- if pending is not none and pending | length > 0 and pending.values() | sum == 0 -%}
select 'zync: no input record of {{ this.identifier }} is pending; nothing to write' as skipped
{%- else -%}
{%- set done = [] -%}
{%- set known = [] -%}
{%- for topic in state.cursors | sort -%}
  {%- do done.append('(' ~ zync_from_cursor('existing', topic, state) ~ ')') -%}
  {%- do known.append(zync_string(topic)) -%}
{%- endfor -%}
{%- do done.append('existing.kafka.topic not in (' ~ known | join(', ') ~ ')' if known else 'true') -%}
merge into {{ target }} as existing
using {{ source }} as new
on existing.kind = 'done'
    and new.kind = 'done'
    and existing.kafka.topic = new.kafka.topic
    and existing.kafka.partition = new.kafka.partition
    and existing.kafka.offset = new.kafka.offset
    and (
        {{ done | join('\n        or ') }}
    )
when matched then update set existing.kind = cast(raise_error(concat(
    'zync: another run of {{ this.identifier }} already wrote ', new.kind, ' row ',
    new.kafka.topic, '@', new.kafka.partition, ':', new.kafka.offset,
    ' (two dbt runs of one output at once?). This run wrote nothing; run it again.'
)) as string)
when not matched then insert *
{%- endif -%}
{%- endmacro %}
