{#
  Data test: no two versions of a key in a history model overlap in time
  ([valid_from, valid_to), an open valid_to reaching to the end of time),
  and none ends before it starts. Fails with one row per version that
  starts before an earlier-starting version of its key has ended, or ends
  before it starts.
#}
{% test zync_history_no_overlaps(model, source_relation, primary_key=none) %}
{{ return(adapter.dispatch('test_zync_history_no_overlaps', 'zync')(model, source_relation, primary_key)) }}
{% endtest %}


{% macro default__test_zync_history_no_overlaps(model, source_relation, primary_key=none) %}
{%- set names = zync_mirror_key_names(source_relation, primary_key) -%}
{%- set quoted = [] -%}
{%- for name in names -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
select * from (
    select
        {{ quoted | join(', ') }},
        `valid_from`,
        `valid_to`,
        `_zync_kafka`,
        max(coalesce(`valid_to`, timestamp'9999-12-31 23:59:59')) over (
            partition by {{ quoted | join(', ') }}
            order by `valid_from`, `valid_to` asc nulls last
            rows between unbounded preceding and 1 preceding
        ) as `earlier_versions_end`
    from {{ model }}
)
where `valid_from` < `earlier_versions_end` or `valid_to` < `valid_from`
{% endmacro %}
