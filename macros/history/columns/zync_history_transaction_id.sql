{#
  A change's source transaction id in its history model: Debezium's
  `value`.`transaction`.`id` (with the connector's
  provide.transaction.metadata), else a null string. Read from the value's
  type in `raw_columns` (zync_mirror_raw_columns) where it can say.
#}
{% macro zync_history_transaction_id(source_relation, raw_columns=none) -%}
  {%- if not execute -%}
    {{ return('cast(null as string)') }}
  {%- endif -%}
  {%- set raw_columns = raw_columns if raw_columns is not none else zync_mirror_raw_columns(source_relation) -%}
  {%- set value_types = {} -%}
  {%- for name, type in zync_mirror_struct_fields(source_relation, '`value`', raw_columns['value']) -%}
    {%- do value_types.update({name | lower: type}) -%}
  {%- endfor -%}
  {%- set transaction_type = value_types.get('transaction') -%}
  {%- if 'transaction' in value_types and (transaction_type is none or transaction_type.startswith('struct')) -%}
    {%- set names = zync_mirror_struct_fields(source_relation, '`value`.`transaction`', transaction_type) | map('first') | map('lower') | list -%}
    {%- if 'id' in names -%}
      {{ return('cast(`value`.`transaction`.`id` as string)') }}
    {%- endif -%}
  {%- endif -%}
  {{ return('cast(null as string)') }}
{%- endmacro %}
