{#
  A cursor ({partition: offset}) as an upper bound on the model's rows: the
  changes at or before it, per partition (`_zync_kafka`.`offset` <= the
  cursor's offset for that partition; none of a partition it lacks). Literal
  bounds, as zync_mirror_cursor_filter's lower ones. `false` for an empty
  cursor (no change).
#}
{% macro zync_mirror_upto_filter(offsets) -%}
  {%- set terms = [] -%}
  {%- for partition in offsets | sort -%}
    {%- do terms.append('(`_zync_kafka`.`partition` = ' ~ (partition | int) ~ ' and `_zync_kafka`.`offset` <= ' ~ (offsets[partition] | int) ~ ')') -%}
  {%- endfor -%}
  {{ return(terms | join('\n        or ') if terms else 'false') }}
{%- endmacro %}
