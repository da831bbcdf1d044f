{#
  Debezium's stand-in for a value it could not read: PostgreSQL leaves an
  unchanged TOASTed column (large text, bytea, arrays, jsonb) out of an
  update's row image under the default replica identity, and Debezium writes
  `unavailable.value.placeholder` (default `__debezium_unavailable_value`)
  in its place. It means "unchanged", never data.

  zync_unavailable(expression, data_type): a SQL predicate that is true when
  the expression holds the placeholder, or none when a value of that Spark
  type cannot hold it (numbers, dates, structs...). Never null.
  The placeholder is var('zync_unavailable_value_placeholder').
#}
{% macro zync_unavailable(expression, data_type) -%}
  {{ return(adapter.dispatch('zync_unavailable', 'zync')(expression, data_type)) }}
{%- endmacro %}


{% macro default__zync_unavailable(expression, data_type) -%}
  {%- set placeholder = dbt.string_literal(var('zync_unavailable_value_placeholder', '__debezium_unavailable_value')) -%}
  {%- set type = data_type | lower | replace(' ', '') -%}
  {%- if type == 'string' or type.startswith('varchar') or type.startswith('char') -%}
    {{ return('coalesce(' ~ expression ~ ' = ' ~ placeholder ~ ', false)') }}
  {%- elif type == 'binary' -%}
    {{ return('coalesce(' ~ expression ~ ' = cast(' ~ placeholder ~ ' as binary), false)') }}
  {%- elif type == 'array<string>' -%}
    {{ return('coalesce(' ~ expression ~ ' = array(' ~ placeholder ~ '), false)') }}
  {%- endif -%}
  {{ return(none) }}
{%- endmacro %}
