{#
  The mirror's cursor as a filter on raw rows: only changes past the last one
  applied, per partition (`kafka`.`offset` > the cursor's offset for that
  partition; every offset of a partition it has not seen yet). Literal
  bounds, so Delta skips the raw files below them.
  Returns none when the mirror holds no row (read everything).
#}
{% macro zync_mirror_cursor(mirror_relation) -%}
  {%- if not execute -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set offsets = zync_mirror_committed_cursor(mirror_relation) -%}
  {%- if offsets is none -%}
    {%- set offsets = zync_mirror_scanned_cursor(mirror_relation) -%}
  {%- endif -%}
  {%- if offsets | length == 0 -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set terms = [] -%}
  {%- set partitions = [] -%}
  {%- for partition in offsets | sort -%}
    {%- do partitions.append(partition | int) -%}
    {%- do terms.append('(`kafka`.`partition` = ' ~ (partition | int) ~ ' and `kafka`.`offset` > ' ~ (offsets[partition] | int) ~ ')') -%}
  {%- endfor -%}
  {%- do terms.append('`kafka`.`partition` not in (' ~ (partitions | join(', ')) ~ ')') -%}
  {{ return(terms | join('\n        or ')) }}
{%- endmacro %}

{#
  The cursor the last MERGE stored in its own commit (userMetadata, see
  zync_mirror_cursor_metadata): read from the Delta log, so a run does not
  scan the mirror for it. none when the log cannot vouch for it: a newer
  commit that may have changed rows (a rebuild, a manual DELETE) or no
  cursor-carrying MERGE in the recent history; the scan then decides.
#}
{% macro zync_mirror_committed_cursor(mirror_relation) -%}
  {#- Commits that change no row's content leave the cursor valid. -#}
  {%- set keeps_rows = ['SET TBLPROPERTIES', 'UNSET TBLPROPERTIES', 'CHANGE COLUMN', 'ADD COLUMNS',
                        'OPTIMIZE', 'VACUUM START', 'VACUUM END', 'ADD CONSTRAINT', 'DROP CONSTRAINT'] -%}
  {%- set history = run_query('describe history ' ~ mirror_relation ~ ' limit 20') -%}
  {%- for row in history.rows -%}
    {%- set metadata = row['userMetadata'] -%}
    {%- if row['operation'] == 'MERGE' and metadata and metadata.startswith('{"zync_mirror_cursor"') -%}
      {{ return(fromjson(metadata)['zync_mirror_cursor']) }}
    {%- elif row['operation'] not in keeps_rows -%}
      {{ return(none) }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(none) }}
{%- endmacro %}

{#
  The cursor from the mirror's rows: the largest `_zync_kafka`.`offset` per
  partition. In hard mode a deleted row takes its offset with it, so this may
  sit before the trailing deletes of a partition; re-applying them is a no-op.
#}
{% macro zync_mirror_scanned_cursor(mirror_relation) -%}
  {%- set rows = run_query(
    'select `_zync_kafka`.`partition`, max(`_zync_kafka`.`offset`) from ' ~ mirror_relation ~ ' group by 1'
  ).rows -%}
  {%- set offsets = {} -%}
  {%- for row in rows -%}
    {%- do offsets.update({row[0] | string: row[1] | int}) -%}
  {%- endfor -%}
  {{ return(offsets) }}
{%- endmacro %}

{#
  The commit userMetadata of a MERGE applying `changes_relation`: the cursor
  past it, i.e. `after` (the cursor this run read from, as offsets) moved to
  the largest offset per partition among the changes.
#}
{% macro zync_mirror_cursor_metadata(mirror_relation, changes_relation) -%}
  {%- set offsets = zync_mirror_committed_cursor(mirror_relation) -%}
  {%- if offsets is none -%}
    {%- set offsets = zync_mirror_scanned_cursor(mirror_relation) -%}
  {%- endif -%}
  {%- set rows = run_query(
    'select `_zync_kafka`.`partition`, max(`_zync_kafka`.`offset`) from ' ~ changes_relation ~ ' group by 1'
  ).rows -%}
  {%- for row in rows -%}
    {%- do offsets.update({row[0] | string: [row[1] | int, offsets.get(row[0] | string, -1) | int] | max}) -%}
  {%- endfor -%}
  {{ return(tojson({'zync_mirror_cursor': offsets})) }}
{%- endmacro %}
