{#
  The INSERT of an output model's rows, refusing records another run wrote.

  Every row a run writes is for a record it saw pending when it rendered
  (past the cursors, without a done row: zync_pending), so another run of the
  same output collides with this one exactly when it wrote a done row for
  one of those records after this one rendered. The statement counts such
  done rows and fails with the message below if there is one, writing
  nothing; the count reads the done rows at or past the rendered cursors
  (one partition, `kind`, and literal bounds Delta prunes by), never the out
  rows or the history below.
  That count is a read of the table inside the INSERT's own transaction, so
  Delta also fails this run (ConcurrentAppendException) if another commits
  done rows between that read and this run's commit: a run that rendered
  before another committed stops on the count, one that wrote at the same
  moment stops on Delta's check. Either way it wrote nothing: run it again.

  The pending records are the ones the render cached (note 'pending_views');
  a run rendered without them (var zync_cache_pending: false) compares the
  done rows of its own result instead, computing the model twice.
#}
{% macro zync_output_insert_sql(target, sql) -%}
{%- set pending = zync_take_note('pending_counts') -%}
{%- set views = zync_take_note('pending_views') or {} -%}
{%- set state = zync_rendered_state() -%}
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
insert into {{ target }}
with new as (
{{ sql }}
),

-- the records this run saw pending, which no other run may have done since
seen_pending as (
{%- if views %}
    {%- for view in views.values() | sort %}
    select kafka from {{ view }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
{%- else %}
    select kafka from new where kind = 'done'
{%- endif %}
),

collisions as (
    select count(*) as rows_done, min(existing.kafka) as first_done
    from {{ target }} as existing
    left semi join seen_pending
        on existing.kafka.topic = seen_pending.kafka.topic
        and existing.kafka.partition = seen_pending.kafka.partition
        and existing.kafka.offset = seen_pending.kafka.offset
    where existing.kind = 'done'
        and (
        {{ done | join('\n        or ') }}
        )
)

select new.*
from new
cross join collisions
where case when collisions.rows_done = 0 then true else raise_error(concat(
    'zync: another run of {{ this.identifier }} already wrote done row ',
    collisions.first_done.topic, '@', collisions.first_done.partition, ':', collisions.first_done.offset,
    ' for a record this run read as pending (two dbt runs of one output at once?). ',
    'This run wrote nothing; run it again.')) end
{%- endif -%}
{%- endmacro %}
