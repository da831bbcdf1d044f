{#
  Exactly once, per output: no input record has more than one done row, and
  every input record below its partition's cursor has one (the cursor says
  everything below it is done). Records at or past the cursor may still be
  pending: they have none yet.
  Returns one row per offending input record, with the problem.
  `inputs`: [{topic, relation}] (the transform's inputs; the compiler
  writes them).
#}
{% test zync_one_done_row_per_input_record(model, inputs) %}
{{ return(adapter.dispatch('test_zync_one_done_row_per_input_record', 'zync')(model, inputs)) }}
{% endtest %}


{% macro default__test_zync_one_done_row_per_input_record(model, inputs) %}
with done as (
    select
        kafka.topic as input_topic,
        kafka.partition as input_partition,
        kafka.offset as input_offset,
        count(*) as done_rows
    from {{ model }}
    where kind = 'done'
    group by kafka.topic, kafka.partition, kafka.offset
),

cursors as (
    {{ zync_cursors(model) | indent(4) }}
),

inputs as (
    {{ zync_test_input_records(inputs) | indent(4) }}
),

below_cursor as (
    select inputs.input_topic, inputs.input_partition, inputs.input_offset
    from inputs
    inner join cursors
        on inputs.input_topic = cursors.topic
        and inputs.input_partition = cursors.partition
    where inputs.input_offset < cursors.cursor_offset
)

select input_topic, input_partition, input_offset, done_rows, 'more than one done row' as problem
from done
where done_rows > 1

union all

select below_cursor.input_topic, below_cursor.input_partition, below_cursor.input_offset, 0 as done_rows,
    'below the cursor but no done row' as problem
from below_cursor
left join done
    on below_cursor.input_topic = done.input_topic
    and below_cursor.input_partition = done.input_partition
    and below_cursor.input_offset = done.input_offset
where done.input_topic is null
{% endmacro %}
