{#
  Input records still pending for this output (zync_stored_pending) whose
  Kafka timestamp is older than a threshold: a denorm partner
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
with pending as (
    {{ zync_test_input_records(inputs, pending_in=model) | indent(4) }}
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
