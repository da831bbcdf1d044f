{#
  The placeholder as `to_json(named_struct('v', x))` renders it for each type
  that can hold it (string, bytes, a one-element array): an IN list
  zync_output_rows uses to leave a field holding it out of an out row's
  `fields`, whatever the field's type.
#}
{% macro zync_unavailable_as_json() -%}
  {%- set placeholder = dbt.string_literal(var('zync_unavailable_value_placeholder', '__debezium_unavailable_value')) -%}
to_json(named_struct('v', {{ placeholder }})), to_json(named_struct('v', array({{ placeholder }}))), to_json(named_struct('v', cast({{ placeholder }} as binary)))
{%- endmacro %}
