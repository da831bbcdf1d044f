{#
  The cursor past a run's changes: the cursor the run read from (`read_from`,
  {partition: offset}), moved to the largest offset per partition among the
  changes (the cached view the MERGE applies).
#}
{% macro zync_mirror_next_cursor(read_from, changes_relation) -%}
  {%- set offsets = dict(read_from) -%}
  {%- set applied = zync_mirror_offsets(
    'select `_zync_kafka`.`partition`, max(`_zync_kafka`.`offset`) from ' ~ changes_relation ~ ' group by 1') -%}
  {%- for partition, offset in applied.items() -%}
    {%- do offsets.update({partition: [offset, offsets.get(partition, -1) | int] | max}) -%}
  {%- endfor -%}
  {{ return(offsets) }}
{%- endmacro %}
