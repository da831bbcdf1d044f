{#
  The messages `zync from-kafka` put in a raw table's dead-letter table
  (errors.tolerance: all) and that no replay has taken since: one row each,
  with its coordinates and error. The compiler attaches it to every
  dead-letter source with severity warn, so `dbt test` warns while any wait
  (replay: `zync from-kafka --topic T --replay-dead-letters`). A dead-letter
  table that does not exist (no message was ever dead-lettered) passes.
#}
{% test zync_no_dead_letters(model) %}
{{ return(adapter.dispatch('test_zync_no_dead_letters', 'zync')(model)) }}
{% endtest %}


{% macro default__test_zync_no_dead_letters(model) %}
{%- set relation = load_relation(model) if execute else model %}
{%- if relation is none %}
select cast(null as string) as topic, cast(null as int) as kafka_partition, cast(null as bigint) as kafka_offset,
    cast(null as string) as error
where false
{%- else %}
select
    kafka.topic as topic,
    kafka.partition as kafka_partition,
    kafka.offset as kafka_offset,
    error
from {{ relation }}
{%- endif %}
{% endmacro %}
