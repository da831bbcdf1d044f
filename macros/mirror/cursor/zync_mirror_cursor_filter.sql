{#
  A cursor ({partition: offset}) as a filter on the model's rows: only
  changes past it, per partition (`_zync_kafka`.`offset` > the cursor's
  offset for that partition; every offset of a partition it has not seen
  yet). Literal bounds, so Delta skips the raw files below them (Spark
  pushes the filter through the model's select down to the raw table).
  none for an empty cursor (read everything).
#}
{% macro zync_mirror_cursor_filter(offsets) -%}
  {%- if not offsets -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set terms = [] -%}
  {%- set partitions = [] -%}
  {%- for partition in offsets | sort -%}
    {%- do partitions.append(partition | int) -%}
    {%- do terms.append('(`_zync_kafka`.`partition` = ' ~ (partition | int) ~ ' and `_zync_kafka`.`offset` > ' ~ (offsets[partition] | int) ~ ')') -%}
  {%- endfor -%}
  {%- do terms.append('`_zync_kafka`.`partition` not in (' ~ (partitions | join(', ')) ~ ')') -%}
  {{ return(terms | join('\n        or ')) }}
{%- endmacro %}
