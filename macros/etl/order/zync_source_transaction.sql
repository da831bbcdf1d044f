{#
  The source transaction of a Debezium change as struct<commit_ms, id>:
  the source's commit time (value.source.ts_ms) and the transaction's id
  (zync_transaction_key of value.transaction.id; null for a change of the
  initial snapshot, which has none). Structs compare field by field, so
  ordering by it is commit order, transactions of one millisecond by id.
#}
{% macro zync_source_transaction(alias) -%}
named_struct('commit_ms', {{ alias }}.value.source.ts_ms, 'id', {{ zync_transaction_key(alias ~ '.value.transaction.id') }})
{%- endmacro %}
