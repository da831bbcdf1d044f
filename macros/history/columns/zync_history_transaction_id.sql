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
  {%- if zync_mirror_value_has_field(source_relation, ['transaction', 'id'], raw_columns) -%}
    {{ return('cast(`value`.`transaction`.`id` as string)') }}
  {%- endif -%}
  {{ return('cast(null as string)') }}
{%- endmacro %}
