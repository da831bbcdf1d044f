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
