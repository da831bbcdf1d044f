{#
  A history model's changes: its rows (`rows`, the view of the model's
  select, zync_mirror_rows_relation: every raw change as the mirror's
  columns with `_zync_op`, `_zync_source_ts`, `_zync_position`,
  `_zync_transaction` and `_zync_kafka`), past its cursor (`after`, a
  filter on `_zync_kafka`, zync_mirror_cursor_filter; none: all of them),
  with the value columns spread (`columns`, zync_mirror_columns). These are
  the events zync_history_versions turns into versions.
#}
{% macro zync_history_changes(rows, key, columns, after=none) -%}
select
    {%- for name in key %}
    {{ adapter.quote(name) }},
    {%- endfor %}
    {%- for column in columns %}
    {{ column.expression }} as {{ adapter.quote(column.name) }},
    {%- endfor %}
    `_zync_op`,
    `_zync_source_ts`,
    `_zync_position`,
    `_zync_transaction`,
    `_zync_kafka`
from {{ rows }}
{%- if after %}
where {{ after }}
{%- endif %}
{%- endmacro %}
