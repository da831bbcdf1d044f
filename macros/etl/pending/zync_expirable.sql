{#
  Whether a pending record may expire: `expire-after` newer records (offsets)
  or a span of Kafka time (seconds) lie between it and the newest pending
  record of its topic/partition. Measured in the stream's own time, not the
  wall clock, so that a replay of the same history decides the same way.
#}
{% macro zync_expirable(expire_after) -%}
{%- if expire_after is none -%}
false
{%- elif 'offsets' in expire_after -%}
kafka.offset + {{ expire_after.offsets | int }} <= max(kafka.offset) over (partition by kafka.partition)
{%- else -%}
unix_micros(kafka.timestamp) + {{ (expire_after.seconds * 1000000) | int }} <= max(unix_micros(kafka.timestamp)) over (partition by kafka.partition)
{%- endif -%}
{%- endmacro %}
