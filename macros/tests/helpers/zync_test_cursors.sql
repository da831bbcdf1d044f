{#
  The current cursor of each input topic/partition of an output table: the
  largest offset of its cursor rows (every input offset below it is done).
  No rows when the table has no cursor rows yet.
#}
{% macro zync_test_cursors(model) -%}
select
    kafka.topic as input_topic,
    kafka.partition as input_partition,
    max(kafka.offset) as cursor_offset
from {{ model }}
where kind = 'cursor'
group by kafka.topic, kafka.partition
{%- endmacro %}
