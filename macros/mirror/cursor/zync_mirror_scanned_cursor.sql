{#
  The cursor from the mirror's rows: the largest `_zync_kafka`.`offset` per
  partition. In hard mode a deleted row takes its offset with it, so this may
  sit before the trailing deletes of a partition; re-applying them is a no-op.
#}
{% macro zync_mirror_scanned_cursor(mirror_relation) -%}
  {{ return(zync_mirror_offsets(
    'select `_zync_kafka`.`partition`, max(`_zync_kafka`.`offset`) from ' ~ mirror_relation ~ ' group by 1')) }}
{%- endmacro %}
