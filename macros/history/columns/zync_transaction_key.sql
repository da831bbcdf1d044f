{#
  What names one source transaction, as SQL over a Debezium transaction id
  (`id`, SQL text): the id's first part for PostgreSQL's `<xid>:<lsn>`,
  whose LSN differs between a transaction's changes, its BEGIN and its END;
  any other connector's id as it is (zync.transactions.transaction_key, the
  same rule in Python).
#}
{% macro zync_transaction_key(id) -%}
coalesce(nullif(regexp_extract({{ id }}, '^([0-9]+):[0-9]+$', 1), ''), {{ id }})
{%- endmacro %}
