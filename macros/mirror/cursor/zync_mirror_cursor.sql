{#
  The mirror's cursor as a filter on the model's rows: only changes past the
  last one applied, per partition (`_zync_kafka`.`offset` > the cursor's
  offset for that partition; every offset of a partition it has not seen
  yet). Literal bounds, so Delta skips the raw files below them (Spark
  pushes the filter through the model's select down to the raw table).
  Returns none when the mirror holds no row (read everything).
  The offsets are left for the materialization (zync_leave_note), which
  writes only if the mirror's cursor is still these when it MERGEs.
#}
{% macro zync_mirror_cursor(mirror_relation) -%}
  {%- if not execute -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set offsets = zync_mirror_current_cursor(mirror_relation) -%}
  {%- do zync_leave_note('mirror_cursor', offsets) -%}
  {%- if offsets | length == 0 -%}
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
