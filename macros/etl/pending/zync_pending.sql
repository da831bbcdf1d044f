{#
  The pending records of one input topic: its raw rows at or past the cursor
  that have no done row in this output table yet (zync's anti-join of the raw
  pool with the done records, limited to what is new or still pending).
  On the first run nothing is done, so every row is pending. Debezium's
  semantic types in `key` and `value` are typed (macros/debezium/), so the
  rules see a date as a date; with `reads` (the field paths the rules read,
  which `zync etl compile` lists) only those are, the other fields are
  carried as written (zync_notes_read). Each row carries `zync_replay_of`: the offset
  of the earlier record it replays, or null (zync_replays); rules leave
  replays alone and the model marks them done as `replayed`.

  `transactions` (an output taking whole source transactions): {'ends': the
  connector's transaction topic's raw view, 'topic': that topic}; each row then also carries `zync_transaction_end`, the offset of
  its source transaction's END there (zync_transaction_ends), which orders
  the output's transactions (zync_source_transaction).

  When the output model runs, the same query is also cached, once, before
  the model's own statement is built (zync_cache_pending): Spark inlines a
  CTE at every reference, and the rules, per-key order and cursors refer to
  each input's pending records a dozen times, each a scan of the raw table
  and of the done rows. Spark's cache manager swaps the cached result in for
  every identical subquery, so the model's text stays what it reads as.
#}
{% macro zync_pending(relation, topic, state, reads=none, transactions=none) -%}
{%- set pending_sql -%}
{%- set notes = zync_field_notes(relation) -%}
{%- if reads is not none -%}{%- set notes = zync_notes_read(notes, reads) -%}{%- endif -%}
{%- if notes.names or notes.defaults %}
select
    {%- for column in adapter.get_columns_in_relation(relation) %}
    {%- if column.name | lower in ('key', 'value') %}
    {{ zync_typed_column(relation, column.name | lower, notes, alias='input') }} as {{ adapter.quote(column.name | lower) }},
    {%- else %}
    input.{{ adapter.quote(column.name) }},
    {%- endif %}
    {%- endfor %}
    input.zync_replay_of
{%- else %}
select input.*
{%- endif %}
from (
    {{ zync_replays(relation, topic, state) | indent(4) }}
) as input
{%- if state.incremental %}
left anti join (
    select kafka
    from {{ this }} as output
    where kind = 'done' and {{ zync_from_cursor('output', topic, state) }}
) as done
    on input.kafka.partition = done.kafka.partition
    and input.kafka.offset = done.kafka.offset
{%- endif %}
where {{ zync_from_cursor('input', topic, state) }}
{%- endset -%}
{%- if transactions -%}
{%- set pending_sql -%}
select /*+ BROADCAST(ends) */ pending.*, ends.end_offset as zync_transaction_end
from (
    {{ pending_sql | indent(4) }}
) as pending
left join (
    {{ zync_transaction_ends(transactions.ends, transactions.topic, state) | indent(4) }}
) as ends
    on {{ zync_transaction_key('pending.value.transaction.id') }} = ends.id
{%- endset -%}
{%- endif -%}
{%- do zync_cache_pending(topic, pending_sql, transactions=transactions is not none) -%}
{{ pending_sql }}
{%- endmacro %}
