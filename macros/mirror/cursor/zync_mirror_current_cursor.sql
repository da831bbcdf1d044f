{#
  The cursor as {partition (string): offset}: the one the mirror's newest
  commit carries (zync_mirror_committed_cursor), else one scanned from its
  rows (zync_mirror_scanned_cursor).
#}
{% macro zync_mirror_current_cursor(mirror_relation) -%}
  {%- set offsets = zync_mirror_committed_cursor(mirror_relation) -%}
  {{ return(offsets if offsets is not none else zync_mirror_scanned_cursor(mirror_relation)) }}
{%- endmacro %}
