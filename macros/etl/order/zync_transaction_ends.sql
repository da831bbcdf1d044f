{#
  The END events of a connector's transaction topic that an output taking
  whole source transactions looks its pending records' transactions up in:
  one row per transaction, `id` (zync_transaction_key) and `end_offset` (its
  END's offset in the transaction topic: its place in commit order; the
  first END, should Debezium send one again).

  `ends`: the transaction topic's raw view (a pooled one); `topic`: the
  transaction topic. Only the ENDs at or past the output's cursor of the
  transaction topic are read (zync_from_cursor): the lowest END of the
  transactions the last run started with pending (zync_output_rows). Every
  record pending now is of one of those or of a transaction the cut passed
  since, whose END comes later; but for a change of a transaction the cut gave
  up on, or sent again long after, whose END is older: it precedes the others
  anyway (zync_source_transaction).
#}
{% macro zync_transaction_ends(ends, topic, state) -%}
select {{ zync_transaction_key('tx.value.id') }} as id, min(tx.kafka.offset) as end_offset
from {{ ends }} as tx
where {{ zync_from_cursor('tx', topic, state) }}
    and tx.value.status = 'END'
group by 1
{%- endmacro %}
