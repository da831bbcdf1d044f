{#
  The rows of this run by kind, status and topic, with the range of offsets.
#}
{% macro zync_run_counts_sql(relation) -%}
select
    kind,
    status,
    kafka.topic as topic,
    count(*) as row_count,
    min(kafka.offset) as first_offset,
    max(kafka.offset) as last_offset
from {{ relation }}
where run_id = {{ dbt.string_literal(invocation_id) }}
group by kind, status, kafka.topic
order by kind, status, kafka.topic
{%- endmacro %}
