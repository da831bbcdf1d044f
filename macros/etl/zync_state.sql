{#
  What the output table says before this run, read once when the model is
  rendered: the cursor (low-water mark) of every input topic/partition, from
  the cursor rows. Returns {'incremental': bool, 'cursors': {topic: {partition: offset}}}.

  The cursors become literals in the scans (`zync_from_cursor`), which is what
  lets Delta skip every file below them. A cursor read here may be stale by
  the time the run commits (another run moved it): that only widens the scan,
  because pending records are still decided by the anti-join with done rows.
  The write bounds its duplicate check with these same cursors
  (zync_rendered_state), so they are kept for it in the Spark session.
#}
{% macro zync_state(output_topic) -%}
  {%- set state = {'incremental': zync_is_incremental(), 'cursors': {}} -%}
  {%- if execute and state.incremental and var('zync_cursor', true) -%}
    {%- set rows = run_query(
        "select kafka.topic, kafka.partition, max(kafka.offset) from " ~ this
        ~ " where kind = 'cursor' and kafka.topic <> " ~ zync_string(output_topic) ~ " group by 1, 2"
    ) -%}
    {%- for row in rows -%}
      {%- do state.cursors.setdefault(row[0], {}).update({row[1] | int: row[2] | int}) -%}
    {%- endfor -%}
    {%- do zync_leave_note('cursors', state.cursors) -%}
  {%- endif -%}
  {{ return(state) }}
{%- endmacro %}


{#
  The state this run's rows were rendered from (zync_state), for the INSERT
  that writes them: its duplicate check must cover every done row another run
  may have written for the same records, and those lie at or past the cursors
  this run read, not past the cursors as they are when the INSERT is built (a
  run that committed meanwhile moved them beyond its own done rows). When the
  render left no note (a run rendered elsewhere), there is no bound: the
  check reads every done row, slower and as safe.
#}
{% macro zync_rendered_state() -%}
  {%- set state = {'incremental': zync_is_incremental(), 'cursors': {}} -%}
  {%- for topic, offsets in (zync_take_note('cursors') or {}).items() -%}
    {%- for partition, offset in offsets.items() -%}
      {%- do state.cursors.setdefault(topic, {}).update({partition | int: offset | int}) -%}
    {%- endfor -%}
  {%- endfor -%}
  {{ return(state) }}
{%- endmacro %}


{# A SQL string literal (topics are checked by the compiler; quotes are escaped anyway). #}
{% macro zync_string(text) -%}
'{{ text | replace("\\", "\\\\") | replace("'", "\\'") }}'
{%- endmacro %}


{#
  A predicate keeping the rows of `topic` at or past its cursors, over the
  `kafka` column of `alias`: literals only, so Delta's data skipping prunes
  every file whose kafka.offset range lies below the cursor. (Partitions
  without a cursor yet are spelled with `<>`, which data skipping evaluates;
  a disjunct it cannot evaluate would make it read every file.)
  `back` widens the range by that many offsets below each cursor (the
  look-back of zync_replays).
#}
{% macro zync_from_cursor(alias, topic, state, back=0) -%}
  {%- set cursors = state.cursors.get(topic, {}) -%}
  {{ alias }}.kafka.topic = {{ zync_string(topic) }}
  {%- if cursors %} and (
        {%- for partition, offset in cursors | dictsort %}
        ({{ alias }}.kafka.partition = {{ partition }} and {{ alias }}.kafka.offset >= {{ offset - back }}) or
        {%- endfor %}
        ({% for partition in cursors | sort %}{{ alias }}.kafka.partition <> {{ partition }}{{ " and " if not loop.last }}{% endfor %})
    )
  {%- endif -%}
{%- endmacro %}


{#
  The next output offset, read from the output topic's cursor row when the
  statement runs (not when it is rendered), so that a run started after
  another committed numbers on from it.
#}
{% macro zync_next_output_offset(output_topic, state) -%}
{%- if state.incremental -%}
(select coalesce(max(kafka.offset), 0) from {{ this }} where kind = 'cursor' and kafka.topic = {{ zync_string(output_topic) }})
{%- else -%}
cast(0 as bigint)
{%- endif -%}
{%- endmacro %}
