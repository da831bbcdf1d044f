{#
  The mirror's cursor as a filter on the model's rows (zync_mirror_cursor_filter):
  only changes past the last one folded into its base (`base_relation`).
  Returns none when the base holds no row (read everything).
  The offsets are left for the materialization (zync_leave_note), which
  writes only if the base's cursor is still these when it MERGEs.
#}
{% macro zync_mirror_cursor(base_relation) -%}
  {%- if not execute -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set offsets = zync_mirror_current_cursor(base_relation) -%}
  {%- do zync_leave_note('mirror_cursor', offsets) -%}
  {{ return(zync_mirror_cursor_filter(offsets)) }}
{%- endmacro %}
