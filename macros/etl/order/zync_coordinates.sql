{#
  The Kafka coordinates of a record as a struct<topic, partition, offset>:
  the identity of an input record in done rows and the key of the anti-join.
#}
{% macro zync_coordinates(alias) -%}
named_struct('topic', {{ alias }}.kafka.topic, 'partition', {{ alias }}.kafka.partition, 'offset', {{ alias }}.kafka.offset)
{%- endmacro %}
