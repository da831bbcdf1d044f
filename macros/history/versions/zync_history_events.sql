{#
  Every event of the keys a run touches, for zync_history_versions to order
  again: the versions the history model holds for the keys of the run's
  changes (`changes_relation`, zync_history_changes), each as the change it
  was made from; the deletes that closed some of them (`_zync_delete`,
  hard_deletes: invalidate keeps a delete on the version it closed, not as a
  row); and the run's changes. `_zync_new` tells the run's changes from the
  events already kept (a record read again keeps its first version).
  `key_filter`: a predicate on the history's rows (alias `mirror`) that every
  changed key passes (zync_mirror_key_filter), so Delta skips the files no
  changed key is in; none: none. Only these keys' versions are read and
  rewritten: a run costs its changes and their keys' versions.
#}
{% macro zync_history_events(history_relation, changes_relation, key, names, key_filter=none) -%}
{%- set on -%}
{% for name in key %}mirror.{{ adapter.quote(name) }} <=> touched.{{ adapter.quote(name) }}{{ " and " if not loop.last }}{% endfor %}
{%- endset -%}
{%- set kept -%}
(
    select mirror.*
    from {{ history_relation }} as mirror
    left semi join (select distinct {% for name in key %}{{ adapter.quote(name) }}{{ ", " if not loop.last }}{% endfor %} from {{ changes_relation }}) as touched
    on {{ on }}
    {%- if key_filter %}
    where {{ key_filter }}
    {%- endif %}
)
{%- endset -%}
select
    {%- for name in key + names %}
    {{ adapter.quote(name) }},
    {%- endfor %}
    `_zync_op`, `_zync_source_ts`, `_zync_position`, `_zync_transaction`, `_zync_kafka`, false as `_zync_new`
from {{ kept }} as kept_versions
union all
select
    {%- for name in key %}
    {{ adapter.quote(name) }},
    {%- endfor %}
    {%- for name in names %}
    null as {{ adapter.quote(name) }},
    {%- endfor %}
    'd', `_zync_delete`.`source_ts`, `_zync_delete`.`position`, `_zync_delete`.`transaction`, `_zync_delete`.`kafka`, false
from {{ kept }} as kept_deletes
where `_zync_delete` is not null
union all
select
    {%- for name in key + names %}
    {{ adapter.quote(name) }},
    {%- endfor %}
    `_zync_op`, `_zync_source_ts`, `_zync_position`, `_zync_transaction`, `_zync_kafka`, true
from {{ changes_relation }}
{%- endmacro %}
