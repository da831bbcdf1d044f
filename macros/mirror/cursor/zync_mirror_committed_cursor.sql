{#
  The cursor a commit of this mirror stored in its userMetadata (see
  zync_mirror_cursor_metadata: every build and every MERGE carries one), read
  from the Delta log so a run does not scan the mirror. Walks the history
  newest first: commits that change no row are passed over, a RESTORE is
  followed to the version it restored. none when the log cannot vouch for the
  cursor: a newer commit that may have changed rows (a manual DELETE or
  INSERT, a restore by timestamp) or none carrying this mirror's cursor in the
  recent history; the scan then decides. The operations that change no row are
  the var zync_operations_keeping_rows (dbt_project.yml); zync run's settled
  cuts read a base's cursor by the same rule (service/settled_cuts.py). A
  project made before the var names none: only the mirror's own newest
  commit vouches for the cursor, and the scan decides after any other.
#}
{% macro zync_mirror_committed_cursor(mirror_relation) -%}
  {%- set keeps_rows = var('zync_operations_keeping_rows', []) -%}
  {%- set walk = {'restored_to': none} -%}
  {%- for row in run_query('describe history ' ~ mirror_relation ~ ' limit 20').rows -%}
    {%- set stored = fromjson(row['userMetadata'] or '', none) -%}
    {%- if walk.restored_to is not none and row['version'] > walk.restored_to -%}
      {#- undone by the RESTORE: not part of the mirror's current state -#}
    {%- elif stored is mapping and stored.get('zync_mirror') == zync_mirror_name(mirror_relation) -%}
      {{ return(stored['cursor']) }}
    {%- elif row['operation'] == 'RESTORE' and zync_mirror_restored_version(row) is not none -%}
      {%- do walk.update({'restored_to': zync_mirror_restored_version(row)}) -%}
    {%- elif row['operation'] not in keeps_rows -%}
      {{ return(none) }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(none) }}
{%- endmacro %}
