{#
  One MERGE applying a batch of last-changes-per-key (zync_mirror_rows) to
  the mirror, in one Delta commit:
  - d: hard mode deletes the row; soft mode flags it (_zync_deleted, with the
    delete's time) and keeps its last values; a soft delete of an unknown key
    is inserted as a flagged row, so the delete is remembered;
  - c, u: upsert;
  - r: upsert too, unless the mirror's row (live, or soft-deleted) comes from
    a change with a source time at or after the read's (the re-snapshot guard).
  `update set *` / `insert *` with schema auto-merge add new columns.
  broadcast: send the changes to every task instead of shuffling the
  mirror to meet them (a run's changes are few beside the mirror's rows; the
  materialization sets it up to var('zync_mirror_broadcast_rows', 2000000)).
#}
{% macro zync_mirror_merge_sql(target_relation, changes_relation, key_names, delete, broadcast=false) -%}
merge into {{ target_relation }} as mirror
{%- if broadcast %}
using (select /*+ BROADCAST(change) */ * from {{ changes_relation }} as change) as change
{%- else %}
using {{ changes_relation }} as change
{%- endif %}
on {% for name in key_names %}mirror.{{ adapter.quote(name) }} = change.{{ adapter.quote(name) }}{{ " and " if not loop.last }}{% endfor %}
{%- if delete == 'hard' %}
when matched and change.`_zync_op` = 'd' then delete
{%- else %}
when matched and change.`_zync_op` = 'd' then update set
    mirror.`_zync_op` = change.`_zync_op`,
    mirror.`_zync_source_ts` = change.`_zync_source_ts`,
    mirror.`_zync_kafka` = change.`_zync_kafka`,
    mirror.`_zync_deleted` = true,
    mirror.`_zync_deleted_at` = change.`_zync_deleted_at`
{%- endif %}
when matched and not coalesce(
    change.`_zync_op` = 'r' and mirror.`_zync_source_ts` >= change.`_zync_source_ts`, false
) then update set *
when not matched{{ " and change.`_zync_op` != 'd'" if delete == 'hard' }} then insert *
{%- endmacro %}
