{#
  The END events of a connector's transaction topic that an output taking
  whole source transactions looks its pending records' transactions up in:
  one row per transaction, `id` (zync_transaction_key) and `end_offset` (its
  END's offset in the transaction topic: its place in commit order; the
  first END, should Debezium send one again).

  `ends`: the transaction topic's raw view (a pooled one); `topic`: the
  transaction topic; `cut`: the pool's cut view (<pool>__cut). Only the ENDs
  at or past the output's cursor of the transaction topic (zync_from_cursor;
  the lowest END of a transaction still pending after the last run, see
  zync_output_rows) and at or before the connector's cut are read: every
  pending record's transaction ends there, but for one given up on by the cut
  or sent again long after (its END is older, so it precedes the others
  anyway, zync_source_transaction). The cut's bound is read in the same query
  as the pending records (one pool version for both).
#}
{% macro zync_transaction_ends(ends, topic, cut, state) -%}
select {{ zync_transaction_key('tx.value.id') }} as id, min(tx.kafka.offset) as end_offset
from {{ ends }} as tx
where {{ zync_from_cursor('tx', topic, state) }}
    and tx.value.status = 'END'
    and tx.kafka.offset <= (select end_offset from {{ cut }} where connector = {{ zync_string(topic) }})
group by 1
{%- endmacro %}
