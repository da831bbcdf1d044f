{#
  Egress aligns the table's output offsets with Kafka's, so the out rows of
  an output table must be numbered 0, 1, 2, ... in partition 0 of its one
  output topic, with no gap and no repeat, up to the output cursor (the
  next offset the ETL will number from, so a lost last row is seen too).
  Returns one row per out row that breaks this, with the problem.
#}
{% test zync_contiguous_output_offsets(model, output_topic) %}
{{ return(adapter.dispatch('test_zync_contiguous_output_offsets', 'zync')(model, output_topic)) }}
{% endtest %}


{% macro default__test_zync_contiguous_output_offsets(model, output_topic) %}
with out_rows as (
    select
        kafka.topic as output_topic,
        kafka.partition as output_partition,
        kafka.offset as output_offset
    from {{ model }}
    where kind = 'out'
),

numbered as (
    select
        output_topic,
        output_partition,
        output_offset,
        lag(output_offset) over (
            partition by output_topic, output_partition order by output_offset
        ) as previous_offset
    from out_rows
)

select
    output_topic,
    output_partition,
    output_offset,
    previous_offset,
    case
        when output_topic <> {{ dbt.string_literal(output_topic) }} or output_partition <> 0
            then 'not in partition 0 of the output topic {{ output_topic }}'
        when previous_offset is null then 'the first output offset is not 0'
        when output_offset = previous_offset then 'output offset repeated'
        else 'gap: the offsets before this one are missing'
    end as problem
from numbered
where output_topic <> {{ dbt.string_literal(output_topic) }}
    or output_partition <> 0
    or (previous_offset is null and output_offset <> 0)
    or output_offset <> previous_offset + 1

union all

select
    {{ dbt.string_literal(output_topic) }} as output_topic,
    0 as output_partition,
    next_offset - 1 as output_offset,
    last_offset as previous_offset,
    'out rows missing at the end: the output cursor is past the last out row' as problem
from (
    select
        (select max(kafka.offset) from {{ model }}
         where kind = 'cursor' and kafka.topic = {{ dbt.string_literal(output_topic) }}) as next_offset,
        (select max(output_offset) from out_rows
         where output_topic = {{ dbt.string_literal(output_topic) }} and output_partition = 0) as last_offset
) as ends
where coalesce(next_offset, 0) <> coalesce(last_offset + 1, 0)
{% endmacro %}
