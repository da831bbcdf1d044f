{#
  The order of a key's versions in its history model: source position
  (zync_history_source_position; nulls first), then Kafka partition and
  offset. The source time is not the order: changes of one transaction
  share it, and a clock may step back.
#}
{% macro zync_history_order() -%}
`_zync_position`, `_zync_kafka`.`partition`, `_zync_kafka`.`offset`
{%- endmacro %}
