{#
  The pending records of one input topic: its raw rows that have no done row
  in this output table yet (zync's anti-join of the raw pool with the done
  records). On the first run nothing is done, so every row is pending.
#}
{% macro zync_pending(relation, topic) -%}
select input.*
from {{ relation }} as input
{%- if is_incremental() %}
left anti join (
    select kafka
    from {{ this }}
    where kind = 'done' and kafka.topic = '{{ topic }}'
) as done
    on input.kafka.partition = done.kafka.partition
    and input.kafka.offset = done.kafka.offset
{%- endif %}
where input.kafka.topic = '{{ topic }}'
{%- endmacro %}
