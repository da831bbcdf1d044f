{#
  Every done row of an output table names a record that exists in one of
  the transform's input tables (same topic, partition and offset): nothing
  is marked done that was never read.
  Returns the done rows without an input record.
  `inputs`: [{topic, relation}] (the transform's inputs; the compiler
  writes them).
#}
{% test zync_done_rows_have_input(model, inputs) %}
{{ return(adapter.dispatch('test_zync_done_rows_have_input', 'zync')(model, inputs)) }}
{% endtest %}


{% macro default__test_zync_done_rows_have_input(model, inputs) %}
with done as (
    select
        kafka.topic as input_topic,
        kafka.partition as input_partition,
        kafka.offset as input_offset,
        status
    from {{ model }}
    where kind = 'done'
),

inputs as (
    {{ zync_test_input_records(inputs) | indent(4) }}
)

select done.input_topic, done.input_partition, done.input_offset, done.status
from done
left join inputs
    on done.input_topic = inputs.input_topic
    and done.input_partition = inputs.input_partition
    and done.input_offset = inputs.input_offset
where inputs.input_topic is null
{% endmacro %}
