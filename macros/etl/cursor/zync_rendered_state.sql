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
