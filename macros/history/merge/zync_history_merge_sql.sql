{#
  One MERGE writing a run's versions (`versions_relation`,
  zync_history_versions over zync_history_events) into the history model,
  one Delta commit: a version it holds (the same Kafka position) takes its
  new valid_to, is_current and `_zync_delete` where they changed (its next
  change arrived, or a late one came between); a new one is inserted. No
  row is deleted. `columns`: the versions' column names, assigned by name.
  key_filter: a predicate on the history's rows (alias `mirror`) every
  changed key passes (zync_mirror_key_filter), so the MERGE's scan skips the
  files no changed key is in; none: none. Dispatched: MERGE, `<=>` and the
  struct paths are Spark and Delta's.
#}
{% macro zync_history_merge_sql(history_relation, versions_relation, key, columns, key_filter=none) -%}
  {{ return(adapter.dispatch('zync_history_merge_sql', 'zync')(history_relation, versions_relation, key, columns, key_filter)) }}
{%- endmacro %}


{% macro default__zync_history_merge_sql(history_relation, versions_relation, key, columns, key_filter=none) -%}
{%- set repaired = ['valid_to', 'is_current', '_zync_delete'] -%}
merge into {{ history_relation }} as mirror
using {{ versions_relation }} as version
on mirror.`_zync_kafka`.`topic` = version.`_zync_kafka`.`topic`
    and mirror.`_zync_kafka`.`partition` = version.`_zync_kafka`.`partition`
    and mirror.`_zync_kafka`.`offset` = version.`_zync_kafka`.`offset`
    {%- for name in key %}
    and mirror.{{ adapter.quote(name) }} <=> version.{{ adapter.quote(name) }}
    {%- endfor %}
    {%- if key_filter %}
    and {{ key_filter }}
    {%- endif %}
when matched and not ({% for name in repaired %}mirror.{{ adapter.quote(name) }} <=> version.{{ adapter.quote(name) }}{{ " and " if not loop.last }}{% endfor %}) then update set
    {%- for name in repaired %}
    mirror.{{ adapter.quote(name) }} = version.{{ adapter.quote(name) }}{{ "," if not loop.last }}
    {%- endfor %}
when not matched then insert (
    {%- for name in columns %}
    {{ adapter.quote(name) }}{{ "," if not loop.last }}
    {%- endfor %}
) values (
    {%- for name in columns %}
    version.{{ adapter.quote(name) }}{{ "," if not loop.last }}
    {%- endfor %}
)
{%- endmacro %}
