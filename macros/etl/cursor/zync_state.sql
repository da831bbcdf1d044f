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
