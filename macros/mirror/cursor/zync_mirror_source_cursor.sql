{#
  The cursor of a mirror built from the whole raw history: the largest raw
  offset per partition of its topic, read before the build. The build reads
  the raw table after this, so the cursor may only be behind what it applied,
  never ahead: a change read again is applied again to the same result.
#}
{% macro zync_mirror_source_cursor(source_relation, topic) -%}
  {{ return(zync_mirror_offsets(
    'select `kafka`.`partition`, max(`kafka`.`offset`) from ' ~ source_relation
    ~ ' where `kafka`.`topic` = ' ~ dbt.string_literal(topic) ~ ' group by 1')) }}
{%- endmacro %}
