{#
  Data test for hard-delete mirrors: no row for a key whose last change in
  the raw history is a delete (by the mirror's own rules: offset order, with
  stale snapshot reads dropped), and no row flagged d.
  Scans the raw history: meant for small data and CI.
#}
{% test zync_mirror_no_deleted_keys(model, source_relation, topic, primary_key=none, source_ts=none) %}
{%- set key = zync_mirror_key_columns(source_relation, primary_key) -%}
{%- set quoted = [] -%}
{%- for name, expression in key -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
with last_change as (
    {{ zync_mirror_rows(source_relation, topic=topic, delete='hard', key=key, columns=[],
                        source_ts=zync_mirror_source_ts(source_relation, source_ts), keep_deletes=true) | indent(4) }}
)

select mirror.*
from {{ model }} as mirror
left join last_change using ({{ quoted | join(', ') }})
where last_change.`_zync_op` = 'd' or mirror.`_zync_op` = 'd'
{% endtest %}
