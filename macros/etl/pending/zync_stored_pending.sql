{#
  What "pending" means, read from the stored tables: the raw records of
  `topic` in `relation` at or past the output's cursor for their partition
  (every offset while the output has no cursor row for it) that have no
  done row in the output. The pending report (the `__pending` view) and the
  zync_pending_age data test select from it; the model's own zync_pending
  selects the same set with the cursor its run read, as literal bounds
  Delta can skip files with. Selects the raw rows, every column.
#}
{% macro zync_stored_pending(output, relation, topic) -%}
select raw.*
from {{ relation }} as raw
left join (
    {{ zync_cursors(output, topic) | indent(4) }}
) as cursors
    on raw.kafka.partition = cursors.partition
left anti join (
    select kafka from {{ output }} where kind = 'done' and kafka.topic = {{ zync_string(topic) }}
) as done
    on raw.kafka.partition = done.kafka.partition and raw.kafka.offset = done.kafka.offset
where raw.kafka.topic = {{ zync_string(topic) }}
    and raw.kafka.offset >= coalesce(cursors.cursor_offset, 0)
{%- endmacro %}
