{#
  A change's source position, which orders a key's versions in its history
  model (before the Kafka partition and offset): Debezium's
  `value`.`source`.`lsn` (PostgreSQL's log sequence number; SQL Server's and
  Db2's connectors name theirs `change_lsn`/`commit_lsn` and are not read
  here), as a bigint, when the raw value's source block has it; else a null
  bigint, and the Kafka position alone orders the versions (one partition per
  table, as Debezium writes, keeps a table's changes in source order). Read
  from the value's type in `raw_columns` (zync_mirror_raw_columns) where it
  can say (zync_mirror_struct_fields).
#}
{% macro zync_history_source_position(source_relation, raw_columns=none) -%}
  {%- if not execute -%}
    {{ return('cast(null as bigint)') }}
  {%- endif -%}
  {%- set raw_columns = raw_columns if raw_columns is not none else zync_mirror_raw_columns(source_relation) -%}
  {%- set value_types = {} -%}
  {%- for name, type in zync_mirror_struct_fields(source_relation, '`value`', raw_columns['value']) -%}
    {%- do value_types.update({name | lower: type}) -%}
  {%- endfor -%}
  {%- set source_type = value_types.get('source') -%}
  {%- if 'source' in value_types and (source_type is none or source_type.startswith('struct')) -%}
    {%- set source_names = zync_mirror_struct_fields(source_relation, '`value`.`source`', source_type) | map('first') | map('lower') | list -%}
    {%- if 'lsn' in source_names -%}
      {{ return('cast(`value`.`source`.`lsn` as bigint)') }}
    {%- endif -%}
  {%- endif -%}
  {{ return('cast(null as bigint)') }}
{%- endmacro %}
