{#
  Data test for hard-delete mirrors: no row for a key whose last change in
  the raw history is a delete (by the mirror's own rules: offset order, with
  stale snapshot reads dropped), and no row flagged d.
  Scans the raw history: meant for small data and CI.
#}
{% test zync_mirror_no_deleted_keys(model, source_relation, primary_key=none) %}
{%- set key = zync_mirror_key_names(source_relation, primary_key) -%}
{%- set quoted = [] -%}
{%- for name in key -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
with last_change as (
    {{ zync_mirror_changes(zync_mirror_test_rows(model), key, [], delete='hard', keep_deletes=true) | indent(4) }}
)

select mirror.*
from {{ model }} as mirror
left join last_change using ({{ quoted | join(', ') }})
where last_change.`_zync_op` = 'd' or mirror.`_zync_op` = 'd'
{% endtest %}
