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
  {%- if zync_mirror_value_has_field(source_relation, ['source', 'lsn'], raw_columns) -%}
    {{ return('cast(`value`.`source`.`lsn` as bigint)') }}
  {%- endif -%}
  {{ return('cast(null as bigint)') }}
{%- endmacro %}
