{#
  The pending records of one input topic: its raw rows at or past the cursor
  that have no done row in this output table yet (zync's anti-join of the raw
  pool with the done records, limited to what is new or still pending).
  On the first run nothing is done, so every row is pending.
#}
{% macro zync_pending(relation, topic, state) -%}
select input.*
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
