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


{#
  The keys of a run's changes as a predicate on the mirror's side of the
  MERGE, their values written out: mirror.`id` in (3, 17, ...), or
  (mirror.`a`, mirror.`b`) in ((1, 'x'), ...) for a composite key. It changes
  no match (every change's key passes it), but it is why a run costs its
  changes rather than the mirror: Delta's MERGE joins the changes to every
  row of each file holding a changed key (with keys spread over the key
  space that is every file), in its write pass as an outer join that
  shuffles them all; Spark evaluates this literal list (a hash set) in the
  mirror's scan, so the join meets only the rows it can match. Delta also
  skips the files whose key range misses the list's (a long list counts as
  the range from its smallest to its largest key).
  none (no filter) when a key column's type has no literal form here: the
  integral types, string and date do.
#}
{% macro zync_mirror_key_filter(changes_relation, key_names) -%}
  {%- set types = {} -%}
  {%- for column in adapter.get_columns_in_relation(changes_relation) -%}
    {%- do types.update({column.name | lower: column.data_type | lower}) -%}
  {%- endfor -%}
  {%- set literals = [] -%}
  {%- for name in key_names -%}
    {%- set data_type = types.get(name | lower) -%}
    {%- set value = adapter.quote(name) -%}
    {%- if data_type in ('tinyint', 'smallint', 'int', 'bigint') -%}
      {%- do literals.append('cast(' ~ value ~ ' as string)') -%}
    {%- elif data_type == 'string' -%}
      {#- a Spark SQL string literal: backslashes and quotes escaped with a backslash -#}
      {%- set as_string -%}concat("'", replace(replace(VALUE, "\\", "\\\\"), "'", "\\'"), "'"){%- endset -%}
      {%- do literals.append(as_string | replace('VALUE', value)) -%}
    {%- elif data_type == 'date' -%}
      {%- do literals.append('concat("date' ~ "'" ~ '", cast(' ~ value ~ ' as string), "' ~ "'" ~ '")') -%}
    {%- else -%}
      {{ return(none) }}
    {%- endif -%}
  {%- endfor -%}
  {%- set or_null = [] -%}
  {%- for literal in literals -%}{%- do or_null.append("coalesce(" ~ literal ~ ", 'null')") -%}{%- endfor -%}
  {%- set tuple = or_null[0] if key_names | length == 1 else "concat('(', " ~ or_null | join(", ', ', ") ~ ", ')')" -%}
  {%- set listed = run_query('select concat_ws(\', \', collect_list(' ~ tuple ~ ')) from ' ~ changes_relation).columns[0].values()[0] -%}
  {%- if not listed -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set mirror_key = [] -%}
  {%- for name in key_names -%}{%- do mirror_key.append('mirror.' ~ adapter.quote(name)) -%}{%- endfor -%}
  {%- set left = mirror_key[0] if key_names | length == 1 else '(' ~ mirror_key | join(', ') ~ ')' -%}
  {{ return(left ~ ' in (' ~ listed ~ ')') }}
{%- endmacro %}

{#
  Makes the mirror's columns those of the changes before a MERGE that
  assigns them by name: new columns are added (`alter table ... add
  columns`, a commit that changes no row, so the cursor stays vouched for);
  a column whose type grew (a nested field added to a struct) is evolved by
  a MERGE that matches no row, under schema auto-merge, carrying the
  current cursor. An added column with a default (`defaults`, {name: SQL},
  zync_after_defaults) is set to it in every row the mirror holds: each was
  written from a record without the field, which Avro reads as the default
  (an update carrying the cursor, before the MERGE writes this run's rows).
  Returns the changes' columns as [(name, type)], without the changes' own
  flag zync_mirror_carries_values.
#}
{% macro zync_mirror_evolve_schema(mirror_relation, changes_relation, defaults={}) -%}
  {%- set existing = {} -%}
  {%- for column in adapter.get_columns_in_relation(mirror_relation) -%}
    {%- do existing.update({column.name | lower: column.data_type | lower}) -%}
  {%- endfor -%}
  {%- set columns = [] -%}
  {%- set added = [] -%}
  {%- set grown = [] -%}
  {%- set filled = [] -%}
  {%- for column in adapter.get_columns_in_relation(changes_relation) if column.name | lower != zync_mirror_carries_values() -%}
    {%- do columns.append((column.name, column.data_type)) -%}
    {%- if column.name | lower not in existing -%}
      {%- do added.append(adapter.quote(column.name) ~ ' ' ~ column.data_type) -%}
      {%- if column.name | lower in defaults -%}
        {%- do filled.append(adapter.quote(column.name) ~ ' = ' ~ defaults[column.name | lower]) -%}
      {%- endif -%}
    {%- elif existing[column.name | lower] != column.data_type | lower -%}
      {%- do grown.append(column.name) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if added -%}
    {%- call statement('add_columns') -%}
      alter table {{ mirror_relation }} add columns ({{ added | join(', ') }})
    {%- endcall -%}
  {%- endif -%}
  {%- if filled -%}
    {%- call zync_mirror_commit_carrying(mirror_relation, zync_mirror_current_cursor(mirror_relation), name='column_defaults') -%}
      update {{ mirror_relation }} set {{ filled | join(', ') }}
    {%- endcall -%}
  {%- endif -%}
  {%- if grown -%}
    {%- call zync_mirror_commit_carrying(mirror_relation, zync_mirror_current_cursor(mirror_relation), name='evolve_schema') -%}
      merge into {{ mirror_relation }} as mirror
      using (select * from {{ changes_relation }} where false) as change
      on false
      when not matched then insert *
    {%- endcall -%}
  {%- endif -%}
  {{ return(columns) }}
{%- endmacro %}
