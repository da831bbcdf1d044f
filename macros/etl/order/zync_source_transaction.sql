{#
  The source transaction of a Debezium change as struct<end, id, order>:
  where its transaction's END sits in the connector's transaction topic
  (`zync_transaction_end`, the pending record's column that
  zync_transaction_ends gives it; null for a change of the initial snapshot,
  which has none, and for one whose END lies below the output's cursor of the
  transaction topic: an END that old precedes every END still looked up), the
  transaction's id (zync_transaction_key of value.transaction.id) and the
  change's place in its transaction (value.transaction.total_order).
  Debezium writes the ENDs in commit order, so ordering by this struct
  (structs compare field by field) is exact commit order, and within one
  transaction the source's order of its changes. Commit time and id are not:
  transactions of one millisecond, and ids that compare as text
  ("1000:..." < "999:...").
#}
{% macro zync_source_transaction(alias) -%}
named_struct('end', {{ alias }}.zync_transaction_end, 'id', {{ zync_transaction_key(alias ~ '.value.transaction.id') }}, 'order', cast({{ alias }}.value.transaction.total_order as bigint))
{%- endmacro %}
