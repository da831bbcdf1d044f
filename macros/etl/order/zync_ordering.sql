{#
  The emission order of an event: struct<offset, topic, partition> of its
  driving record (zync numbers out rows by the driving record's offset).
  Structs compare field by field, so `order by ordering` and `max(ordering)`
  follow that order.

  `transactions`: the aliases of the event's records, for an output whose
  inputs read at their connector's cut (`consistency: transaction`): the
  struct then starts with the event's source transaction, the newest of its
  records' (zync_source_transaction: its END's place in the transaction
  topic, the id, the record's place in the transaction), so that out rows are
  numbered transaction by transaction, in exact commit order, each
  transaction's rows together and in the source's order.
#}
{% macro zync_ordering(alias, transactions=none) -%}
named_struct(
{%- if transactions -%}
'transaction', {% if transactions | length > 1 %}greatest({% for record in transactions %}{{ zync_source_transaction(record) }}{{ ', ' if not loop.last }}{% endfor %}){% else %}{{ zync_source_transaction(transactions[0]) }}{% endif %}, {% endif -%}
'offset', {{ alias }}.kafka.offset, 'topic', {{ alias }}.kafka.topic, 'partition', {{ alias }}.kafka.partition)
{%- endmacro %}
