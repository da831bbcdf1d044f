{#
  The select of a mirror's view (merge-on-read): the rows its base table
  (`base_relation`, folded up to a cursor) holds, with the raw changes past
  that cursor (`after`, zync_mirror_cursor_filter) applied as a SELECT by the
  rules zync_mirror_merge_sql applies them as a MERGE:
  - the changes: zync_mirror_changes over `rows` (the model's select as a
    relation or a parenthesised subquery), the last per key, deletes kept, the
    re-snapshot guard against hard deletes folded away always on;
  - a base row without a change stays as it is; a changed one takes the
    change's columns, except: hard delete removes it; soft delete flags it and
    keeps its values unless the delete carries its key's earlier ones; a
    snapshot read (r) with a source time at or before the row's is ignored; a
    column holding Debezium's unavailable-value placeholder keeps the base's
    value; a column the changes lack keeps the base's;
  - a change of a key the base lacks is a new row (not a hard delete), its
    placeholders null.
  Last-change-wins is idempotent, so the changes past an older cursor applied
  over a base folded further give these rows too: the view stays right while
  its base is folded again, until the fold makes it anew with the new cursor.
  The base is read in one pass, the changes (few) broadcast to it: no shuffle
  of the base. `key`: the primary key's column names; `columns`: the value
  columns (zync_mirror_columns), whose types say which may hold a placeholder.
  The view's columns are the base's, in its order.
#}
{% macro zync_mirror_view_sql(base_relation, rows, key, columns, delete, after=none) -%}
{%- if not execute -%}
  {{ return('select 1') }}
{%- endif -%}
{%- set key_lower = key | map('lower') | list -%}
{%- set types = {} -%}
{%- for column in columns -%}{%- do types.update({column.name | lower: column.data_type}) -%}{%- endfor -%}
{%- set changed = key_lower + (columns | map(attribute='name') | map('lower') | list)
                  + ['_zync_op', '_zync_source_ts', '_zync_kafka'] + (['_zync_deleted', '_zync_deleted_at'] if delete == 'soft' else []) -%}
{%- set base_columns = [] -%}
{%- for row in run_query('describe query select * from ' ~ base_relation).rows -%}
  {%- do base_columns.append({'name': row[0], 'data_type': row[1]}) -%}
{%- endfor -%}
{%- set joined = [] -%}
{%- set inserted = [] -%}
{%- for column in base_columns -%}
  {%- set name = column.name | lower -%}
  {%- set q = adapter.quote(column.name) -%}
  {%- set base_value = 'base.' ~ q -%}
  {%- set change_value = 'change.' ~ q -%}
  {%- set unavailable = zync_unavailable(change_value, types[name]) if name in types else none -%}
  {%- if name in key_lower -%}
    {%- do joined.append(base_value ~ ' as ' ~ q) -%}
    {%- do inserted.append(change_value ~ ' as ' ~ q) -%}
  {%- elif name not in changed -%}
    {%- do joined.append(base_value ~ ' as ' ~ q) -%}
    {%- do inserted.append('cast(null as ' ~ column.data_type ~ ') as ' ~ q) -%}
  {%- else -%}
    {%- set updated = ('case when ' ~ unavailable ~ ' then ' ~ base_value ~ ' else ' ~ change_value ~ ' end') if unavailable else change_value -%}
    {%- if name.startswith('_zync_') -%}
      {%- set deleted = change_value -%}
    {%- else -%}
      {%- set carried = 'change.' ~ adapter.quote(zync_mirror_carries_values()) ~ (' and not ' ~ unavailable if unavailable else '') -%}
      {%- set deleted = 'case when ' ~ carried ~ ' then ' ~ change_value ~ ' else ' ~ base_value ~ ' end' -%}
    {%- endif -%}
    {%- set expression -%}
        case
            when change.`_zync_op` is null then {{ base_value }}
            {%- if delete == 'soft' %}
            when change.`_zync_op` = 'd' then {{ deleted }}
            {%- endif %}
            when change.`_zync_op` = 'r' and base.`_zync_source_ts` >= change.`_zync_source_ts` then {{ base_value }}
            else {{ updated }}
        end as {{ q }}
    {%- endset -%}
    {%- do joined.append(expression | trim) -%}
    {%- do inserted.append(('case when ' ~ unavailable ~ ' then null else ' ~ change_value ~ ' end' if unavailable else change_value) ~ ' as ' ~ q) -%}
  {%- endif -%}
{%- endfor -%}
{%- set on = [] -%}
{%- for name in key -%}{%- do on.append('base.' ~ adapter.quote(name) ~ ' = change.' ~ adapter.quote(name)) -%}{%- endfor -%}
{%- set quoted_key = [] -%}
{%- for name in key -%}{%- do quoted_key.append(adapter.quote(name)) -%}{%- endfor -%}
with change as (
    {{ zync_mirror_changes(rows, key, columns, delete, after=after, keep_deletes=true, history_guard=true) | indent(4) }}
)

-- the base's rows, each with its key's change if there is one
select /*+ BROADCAST(change) */
    {{ joined | join(',\n    ') }}
from {{ base_relation }} as base
left join change on {{ on | join(' and ') }}
{%- if delete == 'hard' %}
where coalesce(change.`_zync_op` != 'd', true)
{%- endif %}

union all

-- the changes of keys the base does not hold
select
    {{ inserted | join(',\n    ') }}
from change
left anti join (
    select /*+ BROADCAST(change) */ {% for name in key %}base.{{ adapter.quote(name) }}{{ ", " if not loop.last }}{% endfor %}
    from {{ base_relation }} as base
    left semi join change on {{ on | join(' and ') }}
) as base on {{ on | join(' and ') }}
{%- if delete == 'hard' %}
where change.`_zync_op` != 'd'
{%- endif %}
{%- endmacro %}
