{#
  Keeps each input record in at most one transformation event: drops the
  records an earlier rule (a CTE with a `consumed` array) already took.
#}
{% macro zync_not_consumed_by(alias, rules) -%}
{%- if rules %}
left anti join (
    {%- for rule in rules %}
    select explode(consumed) as record from {{ rule }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
) as consumed_before
    on {{ alias }}.kafka.topic = consumed_before.record.topic
    and {{ alias }}.kafka.partition = consumed_before.record.partition
    and {{ alias }}.kafka.offset = consumed_before.record.offset
{%- endif %}
{%- endmacro %}
