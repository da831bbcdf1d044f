{#
  What names one source transaction in the ids Debezium gives its changes,
  as SQL over the id expression `id`: the SQL twin of
  zync.transactions.transaction_key (tests/debezium/test_whole_transaction_output.py
  checks they agree). Debezium's PostgreSQL connector writes `<xid>:<lsn>`
  with the LSN of the event at hand, so the changes of one transaction
  differ in it: they share the xid. Other connectors' ids are the
  transaction's as they are.
#}
{% macro zync_transaction_key(id) -%}
coalesce(nullif(regexp_extract({{ id }}, '^([0-9]+):[0-9]+$', 1), ''), {{ id }})
{%- endmacro %}
