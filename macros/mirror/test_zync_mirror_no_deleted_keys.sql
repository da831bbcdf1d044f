{#
  Data test for hard-delete mirrors: no row whose key's latest change in the
  raw history (by offset, tombstones aside) is a delete, and no row flagged d.
  Scans the raw history: meant for small data and CI.
#}
{% test zync_mirror_no_deleted_keys(model, source_relation, topic, primary_key=none) %}
{%- set key = zync_mirror_key_columns(source_relation, primary_key) -%}
{%- set quoted = [] -%}
{%- for name, expression in key -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
with last_change as (
    select *
    from (
        select
            {%- for name, expression in key %}
            {{ expression }} as {{ adapter.quote(name) }},
            {%- endfor %}
            `value`.`op` as op,
            row_number() over (
                partition by {% for name, expression in key %}{{ expression }}{{ ", " if not loop.last }}{% endfor %}
                order by `kafka`.`offset` desc
            ) as recency
        from {{ source_relation }}
        where `kafka`.`topic` = '{{ topic }}' and `value` is not null and `value`.`op` in ('c', 'r', 'u', 'd')
    )
    where recency = 1
)
select mirror.*
from {{ model }} as mirror
left join last_change using ({{ quoted | join(', ') }})
where last_change.op = 'd' or mirror.`_zync_op` = 'd'
{% endtest %}
