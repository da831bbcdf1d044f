{#
  The pending records of one input topic: its raw rows at or past the cursor
  that have no done row in this output table yet (zync's anti-join of the raw
  pool with the done records, limited to what is new or still pending).
  On the first run nothing is done, so every row is pending. Debezium's
  semantic types in `key` and `value` are typed (macros/debezium/), so the
  rules see a date as a date.
#}
{% macro zync_pending(relation, topic, state) -%}
{%- set connect_names = zync_connect_names(relation) -%}
{%- if connect_names %}
select
    {%- for column in adapter.get_columns_in_relation(relation) %}
    {%- if column.name | lower in ('key', 'value') %}
    {{ zync_typed_column(relation, column.name | lower, connect_names, alias='input') }} as {{ adapter.quote(column.name | lower) }}{{ "," if not loop.last }}
    {%- else %}
    input.{{ adapter.quote(column.name) }}{{ "," if not loop.last }}
    {%- endif %}
    {%- endfor %}
{%- else %}
select input.*
{%- endif %}
from {{ relation }} as input
{%- if state.incremental %}
left anti join (
    select kafka
    from {{ this }} as output
    where kind = 'done' and {{ zync_from_cursor('output', topic, state) }}
) as done
    on input.kafka.partition = done.kafka.partition
    and input.kafka.offset = done.kafka.offset
{%- endif %}
where {{ zync_from_cursor('input', topic, state) }}
{%- endmacro %}
