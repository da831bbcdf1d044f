{#
  One MERGE applying a batch of last-changes-per-key (zync_mirror_changes) to
  the mirror, in one Delta commit:
  - d: hard mode deletes the row; soft mode flags it (_zync_deleted, with the
    delete's time) and keeps its last values: the mirror's, or those of an
    earlier change of the key in this run when the delete carries them
    (zync_mirror_carries_values); a soft delete of an unknown key is
    inserted as a flagged row, so the delete is remembered;
  - c, u: upsert;
  - r: upsert too, unless the mirror's row (live, or soft-deleted) comes from
    a change with a source time at or after the read's (the re-snapshot guard).
  Every column is assigned by name (`columns`: the changes' [(name, type)],
  zync_mirror_evolve_schema has made the mirror's types the same), never
  with `update set *`: under schema auto-merge Delta 3.3 expands a NULL
  struct into a struct of NULLs there (delta-io/delta#2248). A column holding
  Debezium's unavailable-value placeholder (zync_unavailable) keeps the
  mirror's value, or is null in a new row.
  broadcast: send the changes to every task instead of shuffling the
  mirror to meet them (a run's changes are few beside the mirror's rows; the
  materialization sets it up to var('zync_mirror_broadcast_rows', 2000000)).
  key_filter: a predicate on the mirror's rows that every changed key passes
  (zync_mirror_key_filter), added to the match condition; none: no filter.
#}
{% macro zync_mirror_merge_sql(target_relation, changes_relation, key_names, columns, delete, broadcast=false, key_filter=none) -%}
{%- set key_lower = key_names | map('lower') | list -%}
merge into {{ target_relation }} as mirror
{%- if broadcast %}
using (select /*+ BROADCAST(change) */ * from {{ changes_relation }} as change) as change
{%- else %}
using {{ changes_relation }} as change
{%- endif %}
on {% for name in key_names %}mirror.{{ adapter.quote(name) }} = change.{{ adapter.quote(name) }}{{ " and " if not loop.last }}{% endfor %}
{%- if key_filter %}
    and {{ key_filter }}
{%- endif %}
{%- if delete == 'hard' %}
when matched and change.`_zync_op` = 'd' then delete
{%- else %}
when matched and change.`_zync_op` = 'd' then update set
    {%- for name, data_type in columns if name | lower not in key_lower %}
    {%- if name.startswith('_zync_') %}
    mirror.{{ adapter.quote(name) }} = change.{{ adapter.quote(name) }}{{ "," if not loop.last }}
    {%- else %}
    {%- set unavailable = zync_unavailable('change.' ~ adapter.quote(name), data_type) %}
    mirror.{{ adapter.quote(name) }} = case when change.{{ adapter.quote(zync_mirror_carries_values()) }}{% if unavailable %} and not {{ unavailable }}{% endif %} then change.{{ adapter.quote(name) }} else mirror.{{ adapter.quote(name) }} end{{ "," if not loop.last }}
    {%- endif %}
    {%- endfor %}
{%- endif %}
when matched and not coalesce(
    change.`_zync_op` = 'r' and mirror.`_zync_source_ts` >= change.`_zync_source_ts`, false
) then update set
    {%- for name, data_type in columns if name | lower not in key_lower %}
    {%- set unavailable = zync_unavailable('change.' ~ adapter.quote(name), data_type) if not name.startswith('_zync_') else none %}
    mirror.{{ adapter.quote(name) }} = {% if unavailable %}case when {{ unavailable }} then mirror.{{ adapter.quote(name) }} else change.{{ adapter.quote(name) }} end{% else %}change.{{ adapter.quote(name) }}{% endif %}{{ "," if not loop.last }}
    {%- endfor %}
when not matched{{ " and change.`_zync_op` != 'd'" if delete == 'hard' }} then insert (
    {%- for name, data_type in columns %}
    {{ adapter.quote(name) }}{{ "," if not loop.last }}
    {%- endfor %}
) values (
    {%- for name, data_type in columns %}
    {%- set unavailable = zync_unavailable('change.' ~ adapter.quote(name), data_type) if not name.startswith('_zync_') and name | lower not in key_lower else none %}
    {% if unavailable %}case when {{ unavailable }} then null else change.{{ adapter.quote(name) }} end{% else %}change.{{ adapter.quote(name) }}{% endif %}{{ "," if not loop.last }}
    {%- endfor %}
)
{%- endmacro %}
