{#
  The mirror's cursor as a filter on the model's rows: only changes past the
  last one applied, per partition (`_zync_kafka`.`offset` > the cursor's
  offset for that partition; every offset of a partition it has not seen
  yet). Literal bounds, so Delta skips the raw files below them (Spark
  pushes the filter through the model's select down to the raw table).
  Returns none when the mirror holds no row (read everything).
  The offsets are left for the materialization (zync_leave_note), which
  writes only if the mirror's cursor is still these when it MERGEs.
#}
{% macro zync_mirror_cursor(mirror_relation) -%}
  {%- if not execute -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set offsets = zync_mirror_current_cursor(mirror_relation) -%}
  {%- do zync_leave_note('mirror_cursor', offsets) -%}
  {%- if offsets | length == 0 -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set terms = [] -%}
  {%- set partitions = [] -%}
  {%- for partition in offsets | sort -%}
    {%- do partitions.append(partition | int) -%}
    {%- do terms.append('(`_zync_kafka`.`partition` = ' ~ (partition | int) ~ ' and `_zync_kafka`.`offset` > ' ~ (offsets[partition] | int) ~ ')') -%}
  {%- endfor -%}
  {%- do terms.append('`_zync_kafka`.`partition` not in (' ~ (partitions | join(', ')) ~ ')') -%}
  {{ return(terms | join('\n        or ')) }}
{%- endmacro %}

{#
  The cursor as {partition (string): offset}: the one the mirror's newest
  commit carries (zync_mirror_committed_cursor), else one scanned from its
  rows (zync_mirror_scanned_cursor).
#}
{% macro zync_mirror_current_cursor(mirror_relation) -%}
  {%- set offsets = zync_mirror_committed_cursor(mirror_relation) -%}
  {{ return(offsets if offsets is not none else zync_mirror_scanned_cursor(mirror_relation)) }}
{%- endmacro %}

{#
  The cursor a commit of this mirror stored in its userMetadata (see
  zync_mirror_cursor_metadata: every build and every MERGE carries one), read
  from the Delta log so a run does not scan the mirror. Walks the history
  newest first: commits that change no row are passed over, a RESTORE is
  followed to the version it restored. none when the log cannot vouch for the
  cursor: a newer commit that may have changed rows (a manual DELETE or
  INSERT, a restore by timestamp) or none carrying this mirror's cursor in the
  recent history; the scan then decides.
#}
{% macro zync_mirror_committed_cursor(mirror_relation) -%}
  {%- set keeps_rows = ['SET TBLPROPERTIES', 'UNSET TBLPROPERTIES', 'CHANGE COLUMN', 'ADD COLUMNS',
                        'OPTIMIZE', 'VACUUM START', 'VACUUM END', 'ADD CONSTRAINT', 'DROP CONSTRAINT'] -%}
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

{#
  The version a RESTORE commit (a `describe history` row) went back to; none
  if restored by timestamp. dbt hands map columns over as JSON text.
#}
{% macro zync_mirror_restored_version(history_row) -%}
  {%- set parameters = history_row['operationParameters'] -%}
  {%- set parameters = fromjson(parameters, none) if parameters is string else parameters -%}
  {%- set version = parameters.get('version') if parameters is mapping else none -%}
  {{ return(version | int if version is not none and version | string | trim | length > 0 else none) }}
{%- endmacro %}

{#
  The cursor from the mirror's rows: the largest `_zync_kafka`.`offset` per
  partition. In hard mode a deleted row takes its offset with it, so this may
  sit before the trailing deletes of a partition; re-applying them is a no-op.
#}
{% macro zync_mirror_scanned_cursor(mirror_relation) -%}
  {{ return(zync_mirror_offsets(
    'select `_zync_kafka`.`partition`, max(`_zync_kafka`.`offset`) from ' ~ mirror_relation ~ ' group by 1')) }}
{%- endmacro %}

{#
  The cursor of a mirror built from the whole raw history: the largest raw
  offset per partition of its topic, read before the build. The build reads
  the raw table after this, so the cursor may only be behind what it applied,
  never ahead: a change read again is applied again to the same result.
#}
{% macro zync_mirror_source_cursor(source_relation, topic) -%}
  {{ return(zync_mirror_offsets(
    'select `kafka`.`partition`, max(`kafka`.`offset`) from ' ~ source_relation
    ~ ' where `kafka`.`topic` = ' ~ dbt.string_literal(topic) ~ ' group by 1')) }}
{%- endmacro %}

{#
  The cursor past a run's changes: the cursor the run read from (`read_from`,
  {partition: offset}), moved to the largest offset per partition among the
  changes (the cached view the MERGE applies).
#}
{% macro zync_mirror_next_cursor(read_from, changes_relation) -%}
  {%- set offsets = dict(read_from) -%}
  {%- set applied = zync_mirror_offsets(
    'select `_zync_kafka`.`partition`, max(`_zync_kafka`.`offset`) from ' ~ changes_relation ~ ' group by 1') -%}
  {%- for partition, offset in applied.items() -%}
    {%- do offsets.update({partition: [offset, offsets.get(partition, -1) | int] | max}) -%}
  {%- endfor -%}
  {{ return(offsets) }}
{%- endmacro %}

{# {partition (string): offset} from a query returning (partition, offset) rows. #}
{% macro zync_mirror_offsets(sql) -%}
  {%- set offsets = {} -%}
  {%- for row in run_query(sql).rows -%}
    {%- do offsets.update({row[0] | string: row[1] | int}) -%}
  {%- endfor -%}
  {{ return(offsets) }}
{%- endmacro %}

{#
  The commit userMetadata that carries a cursor, e.g.
  {"zync_mirror": "zync.orders_mirror", "cursor": {"0": 1099999}}. The mirror's
  name is in it because the setting is session-wide: a commit to another table
  that ran alongside may carry it, and is then not taken for this mirror's.
#}
{% macro zync_mirror_cursor_metadata(mirror_relation, offsets) -%}
  {{ return(tojson({'zync_mirror': zync_mirror_name(mirror_relation), 'cursor': offsets})) }}
{%- endmacro %}

{% macro zync_mirror_name(mirror_relation) -%}
  {{ return(mirror_relation.schema ~ '.' ~ mirror_relation.identifier) }}
{%- endmacro %}
