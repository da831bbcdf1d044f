{#
  The value of `column` in the last of its key's changes up to this one (in
  offset order) for which `condition` holds; the row's own value when none
  does. Wrapped in a struct so that a null value counts as a value.
#}
{% macro zync_mirror_last_where(column, condition, partition_by) -%}
coalesce(
            last_value(case when {{ condition }} then named_struct('v', {{ column }}) end, true) over (
                partition by {{ partition_by }}
                order by `_zync_kafka`.`offset`
                rows between unbounded preceding and current row
            ),
            named_struct('v', {{ column }})
        ).`v`
{%- endmacro %}
