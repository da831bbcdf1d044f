{#
  What the output table says before this run, read once when the model is
  rendered: the cursor (low-water mark) of every input topic/partition
  (zync_cursors; the output topic's own is read when the INSERT runs,
  zync_next_output_offset). Returns {'incremental': bool, 'cursors': {topic: {partition: offset}}}.

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
    {%- for row in run_query(zync_cursors(this)) if row[0] != output_topic -%}
      {%- do state.cursors.setdefault(row[0], {}).update({row[1] | int: row[2] | int}) -%}
    {%- endfor -%}
    {%- do zync_leave_note('cursors', state.cursors) -%}
  {%- endif -%}
  {{ return(state) }}
{%- endmacro %}
