{#
  Input records still pending for this output (no done row, at or past the
  cursor) whose Kafka timestamp is older than a threshold: a denorm partner
  that never came, or a stalled pipeline. The compiler attaches it with
  severity warn; the threshold is the var zync_pending_warn_after_minutes
  (default 60) unless `warn_after_minutes` is given.
  Returns the old pending records with their age in minutes.
  `inputs`: [{topic, relation}] (the transform's inputs; the compiler
  writes them).
#}
{% test zync_pending_age(model, inputs, warn_after_minutes=none) %}
{{ return(adapter.dispatch('test_zync_pending_age', 'zync')(model, inputs, warn_after_minutes)) }}
{% endtest %}

{% macro default__test_zync_pending_age(model, inputs, warn_after_minutes=none) %}
{%- set minutes = warn_after_minutes if warn_after_minutes is not none
    else var('zync_pending_warn_after_minutes', 60) %}
with done as (
    select kafka.topic as input_topic, kafka.partition as input_partition, kafka.offset as input_offset
    from {{ model }}
    where kind = 'done'
),

cursors as (
    {{ zync_test_cursors(model) | indent(4) }}
),

inputs as (
    {{ zync_test_input_records(inputs) | indent(4) }}
),

pending as (
    select inputs.*
    from inputs
    left join cursors
        on inputs.input_topic = cursors.input_topic
        and inputs.input_partition = cursors.input_partition
    left join done
        on inputs.input_topic = done.input_topic
        and inputs.input_partition = done.input_partition
        and inputs.input_offset = done.input_offset
    where inputs.input_offset >= coalesce(cursors.cursor_offset, 0)
        and done.input_topic is null
)

select
    input_topic,
    input_partition,
    input_offset,
    input_timestamp,
    {{ zync_seconds_since('input_timestamp') }} / 60.0 as age_minutes
from pending
where {{ zync_seconds_since('input_timestamp') }} > {{ minutes | float }} * 60
{% endmacro %}
