{#
  What a mirror run writes, from the mirror model's rows (`rows`: the view
  of the model's select, zync_mirror_rows_relation: every raw change as the
  mirror's columns, `_zync_op`, `_zync_source_ts` and `_zync_kafka`): on the
  first run (or --full-refresh) the mirror's rows rebuilt from the whole raw
  history; afterwards the changes past the mirror's cursor (`after`, a filter
  on `_zync_kafka`), one row per key, for zync_mirror_merge_sql.
  `key`: the primary key's column names; `columns`: the value columns,
  zync_mirror_columns. The rows are the topic's changes (the model leaves
  out tombstones and ops other than c, r, u, d); in offset order:
  - the re-snapshot guard: a snapshot read (r) is dropped when an earlier
    change to its key (earlier in this batch, or in hard mode an earlier
    delete before the cursor) has a source time at or after the read's;
    zync_mirror_merge_sql applies the same rule against the mirror's row;
  - of what is left, the change with the largest offset wins per key;
  - a column holding Debezium's unavailable-value placeholder (an unchanged
    TOASTed value, zync_unavailable) takes the last real value of its key
    among these changes; if there is none it stays the placeholder, and the
    MERGE keeps the mirror's value (a rebuild, keep_deletes=false, has no
    earlier value to keep and writes null).
  keep_deletes=false (a rebuild) leaves deleted keys out in hard mode;
  keep_deletes=true keeps the deletes (for the MERGE, or the mirror's view, to apply).
  history_guard: in hard mode, whether the re-snapshot guard consults the
  raw history before the cursor for the deletes the mirror no longer holds:
  none asks the changes now (a MERGE: only when they hold a snapshot read);
  true always (the mirror's view, whose changes arrive after it is made).
  Soft mode adds _zync_deleted and _zync_deleted_at, and a delete carries
  the values of its key's last earlier change among these rows (a
  soft-deleted row keeps its key's last values however its changes fell
  into runs: an update and its delete in one run keep the update's values,
  as they would in two runs); for the MERGE, keep_deletes=true adds
  zync_mirror_carries_values(), true on such deletes (not a mirror column).
#}
{% macro zync_mirror_changes(rows, key, columns, delete, after=none, keep_deletes=false, history_guard=none) -%}
  {%- set key_names = [] -%}
  {%- for name in key -%}{%- do key_names.append(adapter.quote(name)) -%}{%- endfor -%}
  {%- set partition_by = key_names | join(', ') -%}
  {%- set guard_history = keep_deletes and delete == 'hard' and after and (history_guard or (history_guard is none and zync_mirror_has_snapshot_reads(rows, after))) -%}
  {%- set unavailable = {} -%}
  {%- for column in columns -%}
    {%- set test = zync_unavailable(adapter.quote(column.name), column.data_type) -%}
    {%- if test is not none -%}{%- do unavailable.update({column.name: test}) -%}{%- endif -%}
  {%- endfor -%}
  {%- set names = key + columns | map(attribute='name') | list -%}
with

changes as (
    select
        {%- for name in key %}
        {{ adapter.quote(name) }},
        {%- endfor %}
        {%- for column in columns %}
        {{ column.expression }} as {{ adapter.quote(column.name) }},
        {%- endfor %}
        `_zync_op`,
        `_zync_source_ts`,
        `_zync_kafka`
    from {{ rows }}
    {%- if after %}
    where {{ after }}
    {%- endif %}
),
{%- if guard_history %}

snapshot_keys as (
    select distinct {{ partition_by }} from changes where `_zync_op` = 'r'
),

-- hard mode keeps no deleted rows: the raw history before the cursor
-- remembers the deletes of keys that arrive now as snapshot reads (only
-- those keys' deletes are aggregated: the semi join comes first)
past_deletes as (
    select {{ partition_by }}, max(`_zync_source_ts`) as `_zync_deleted_ts`
    from {{ rows }}
    left semi join snapshot_keys using ({{ partition_by }})
    where `_zync_op` = 'd' and not ({{ after }})
    group by {{ partition_by }}
),
{%- endif %}

ordered as (
    select
        changes.*,
        max(`_zync_source_ts`) over (
            partition by {{ partition_by }}
            order by `_zync_kafka`.`offset`
            rows between unbounded preceding and 1 preceding
        ) as `_zync_earlier_ts`
    from changes
),

kept as (
    select ordered.*
    from ordered
    {%- if guard_history %}
    left join past_deletes as past using ({{ partition_by }})
    {%- endif %}
    where not coalesce(
        `_zync_op` = 'r'
        and {{ "greatest(`_zync_earlier_ts`, `_zync_deleted_ts`)" if guard_history else "`_zync_earlier_ts`" }} >= `_zync_source_ts`,
        false
    )
),

{%- if delete == 'soft' %}

-- a delete takes the values of its key's last earlier change in this batch
carried as (
    select
        {%- for name in key %}
        {{ adapter.quote(name) }},
        {%- endfor %}
        {%- for column in columns %}
        case when `_zync_op` = 'd' then
            {{ zync_mirror_last_where(adapter.quote(column.name), "`_zync_op` != 'd'", partition_by) }}
        else {{ adapter.quote(column.name) }} end as {{ adapter.quote(column.name) }},
        {%- endfor %}
        `_zync_op` = 'd' and count(case when `_zync_op` != 'd' then 1 end) over (
            partition by {{ partition_by }}
            order by `_zync_kafka`.`offset`
            rows between unbounded preceding and current row
        ) > 0 as {{ adapter.quote(zync_mirror_carries_values()) }},
        `_zync_op`,
        `_zync_source_ts`,
        `_zync_kafka`
    from kept
),
{%- endif %}

latest as (
    select
        {%- for name in names %}
        {%- if name in unavailable %}
        {{ zync_mirror_last_where(adapter.quote(name), 'not ' ~ unavailable[name], partition_by) }} as {{ adapter.quote(name) }},
        {%- else %}
        {{ adapter.quote(name) }},
        {%- endif %}
        {%- endfor %}
        `_zync_op`,
        `_zync_source_ts`,
        `_zync_kafka`,
        {%- if delete == 'soft' %}
        {{ adapter.quote(zync_mirror_carries_values()) }},
        {%- endif %}
        row_number() over (partition by {{ partition_by }} order by `_zync_kafka`.`offset` desc) as `_zync_rank`
    from {{ 'carried' if delete == 'soft' else 'kept' }}
)

select
    {%- for name in names %}
    {%- if name in unavailable and not keep_deletes %}
    case when {{ unavailable[name] }} then null else {{ adapter.quote(name) }} end as {{ adapter.quote(name) }},
    {%- else %}
    {{ adapter.quote(name) }},
    {%- endif %}
    {%- endfor %}
    `_zync_op`,
    `_zync_source_ts`,
    `_zync_kafka`
    {%- if delete == 'soft' %},
    `_zync_op` = 'd' as `_zync_deleted`,
    case when `_zync_op` = 'd' then coalesce(timestamp_millis(`_zync_source_ts`), `_zync_kafka`.`timestamp`) end as `_zync_deleted_at`
    {%- if keep_deletes %},
    {{ adapter.quote(zync_mirror_carries_values()) }}
    {%- endif %}
    {%- endif %}
from latest
where `_zync_rank` = 1
{%- if delete == 'hard' and not keep_deletes %}
    and `_zync_op` != 'd'
{%- endif %}
{%- endmacro %}
