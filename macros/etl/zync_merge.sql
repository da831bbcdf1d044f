{#
  How a zync output model appends its rows: a MERGE that inserts them all in
  one commit and refuses any that is already there.

  A blind append would let two `dbt run`s of the same model at once both
  commit the same records. A MERGE reads the table, so Delta fails the
  second of two concurrent writers (ConcurrentAppendException: "Files were
  added ... by a concurrent update"); a run that read an older state and
  starts after another committed matches that run's rows and stops with the
  message below. Either way the failed run wrote nothing: run it again.

  The target-only conditions (out offsets from the output cursor on, done
  rows from the input cursors on) let Delta prune the files it reads; they are
  read when the statement is built, after the rows were rendered, so they can
  only be newer, never cut off a row this run could collide with.

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
{%- set state = zync_state(output_topic) -%}
{%- set next_offset = run_query(
    "select coalesce(max(kafka.offset), 0) from " ~ target ~ " where kind = 'cursor' and kafka.topic = " ~ zync_string(output_topic)
).columns[0].values()[0] | int -%}
{%- set done = [] -%}
{%- set known = [] -%}
{%- for topic in state.cursors | sort -%}
  {%- do done.append('(' ~ zync_from_cursor('existing', topic, state) ~ ')') -%}
  {%- do known.append(zync_string(topic)) -%}
{%- endfor -%}
{%- do done.append('existing.kafka.topic not in (' ~ known | join(', ') ~ ')' if known else 'true') -%}
merge into {{ target }} as existing
using {{ source }} as new
on existing.kind = new.kind
    and existing.kafka.topic = new.kafka.topic
    and existing.kafka.partition = new.kafka.partition
    and existing.kafka.offset = new.kafka.offset
    and (
        existing.kind = 'cursor'
        or (existing.kind = 'out' and existing.kafka.offset >= {{ next_offset }})
        or (existing.kind = 'done' and (
            {{ done | join('\n            or ') }}
        ))
    )
when matched then update set existing.kind = cast(raise_error(concat(
    'zync: another run of {{ this.identifier }} already wrote ', new.kind, ' row ',
    new.kafka.topic, '@', new.kafka.partition, ':', new.kafka.offset,
    ' (two dbt runs of one output at once?). This run wrote nothing; run it again.'
)) as string)
when not matched then insert *
{%- endmacro %}
