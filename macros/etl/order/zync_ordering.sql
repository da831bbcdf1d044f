{#
  The emission order of an event: struct<offset, topic, partition> of its
  driving record (zync numbers out rows by the driving record's offset).
  Structs compare field by field, so `order by ordering` and `max(ordering)`
  follow that order.
#}
{% macro zync_ordering(alias) -%}
named_struct('offset', {{ alias }}.kafka.offset, 'topic', {{ alias }}.kafka.topic, 'partition', {{ alias }}.kafka.partition)
{%- endmacro %}
