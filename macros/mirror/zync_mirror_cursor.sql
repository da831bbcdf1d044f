{#
  The mirror's cursor as a filter on raw rows: only changes past the last one
  applied, per partition (`kafka`.`offset` > the largest `_zync_kafka`.`offset`
  the mirror holds for that partition; every offset of a partition it has not
  seen yet). Literal bounds, so Delta skips the raw files below them.
  Returns none when the mirror holds no row (read everything).

  In hard mode a deleted row takes its offset with it, so the cursor may sit
  before the trailing deletes of a partition; re-applying them is a no-op.
#}
{% macro zync_mirror_cursor(mirror_relation) -%}
  {%- if not execute -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set rows = run_query(
    'select `_zync_kafka`.`partition`, max(`_zync_kafka`.`offset`) from ' ~ mirror_relation ~ ' group by 1 order by 1'
  ).rows -%}
  {%- if rows | length == 0 -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set terms = [] -%}
  {%- set partitions = [] -%}
  {%- for row in rows -%}
    {%- do partitions.append(row[0] | int) -%}
    {%- do terms.append('(`kafka`.`partition` = ' ~ (row[0] | int) ~ ' and `kafka`.`offset` > ' ~ (row[1] | int) ~ ')') -%}
  {%- endfor -%}
  {%- do terms.append('`kafka`.`partition` not in (' ~ (partitions | join(', ')) ~ ')') -%}
  {{ return(terms | join('\n        or ')) }}
{%- endmacro %}
