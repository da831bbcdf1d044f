{#
  Helpers shared by zync's generic data tests (one job each).
#}

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


{#
  The coordinates of every raw record of the transform's inputs, one
  union: `inputs` is [{topic, relation}] as the compiler writes it in the
  properties YAML. With `pending_in` (an output table), only the records
  pending for it (zync_stored_pending).
#}
{% macro zync_test_input_records(inputs, pending_in=none) -%}
{%- for input in inputs %}
select
    kafka.topic as input_topic,
    kafka.partition as input_partition,
    kafka.offset as input_offset,
    kafka.timestamp as input_timestamp
{%- if pending_in is none %}
from {{ input['relation'] }}
where kafka.topic = {{ dbt.string_literal(input['topic']) }}
{%- else %}
from (
    {{ zync_stored_pending(pending_in, input['relation'], input['topic']) | indent(4) }}
) as pending
{%- endif %}
{%- if not loop.last %}
union all
{% endif %}
{%- endfor %}
{%- endmacro %}


{#
  Seconds from a timestamp to now, as a number.
#}
{% macro zync_seconds_since(timestamp) -%}
{{ return(adapter.dispatch('zync_seconds_since', 'zync')(timestamp)) }}
{%- endmacro %}

{% macro default__zync_seconds_since(timestamp) -%}
{{ dbt.datediff(timestamp, dbt.current_timestamp(), 'second') }}
{%- endmacro %}

{% macro spark__zync_seconds_since(timestamp) -%}
(unix_timestamp(current_timestamp()) - unix_timestamp({{ timestamp }}))
{%- endmacro %}
