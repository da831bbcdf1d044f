{#
  zync_cursors ([source](macros/etl/cursor/zync_cursors.sql))

  The cursors of an output table: per topic and partition, the largest
  offset among its `cursor` rows. For an input topic that is the low-water
  mark: every input offset of the partition below it is done. The output
  topic's own cursor row (partition 0: the next output offset) is among them
  unless `topic` names an input.

  Every reader of a cursor selects from this, so that what a cursor is has
  one definition: the runs' state (zync_state), what is pending
  (zync_stored_pending), the data tests, and `zync etl status`.

  **Args:**
  - `output` (required): the output table, a relation or its quoted name.
  - `topic` (optional): only this topic's cursors; every topic's by default.

  **Returns:** a select of `topic`, `partition` and `cursor_offset`, one row
  per topic and partition with a cursor; no rows before the first cursor row.

  **Usage:**
  ```
  select * from ({{ zync_cursors(ref('new_invoices'), topic='Invoices') }}) as cursors
  ```
#}
{% macro zync_cursors(output, topic=none) -%}
select kafka.topic as topic, kafka.partition as partition, max(kafka.offset) as cursor_offset
from {{ output }}
where kind = 'cursor'
    {%- if topic is not none %} and kafka.topic = {{ zync_string(topic) }}{% endif %}
group by kafka.topic, kafka.partition
{%- endmacro %}
