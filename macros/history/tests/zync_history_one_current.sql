{#
  Data test: a key has at most one current version in a history model, and
  a current version is open (no valid_to). Fails with one row per key with
  more than one current version, or with a current version that ended.
#}
{% test zync_history_one_current(model, source_relation, primary_key=none) %}
{{ return(adapter.dispatch('test_zync_history_one_current', 'zync')(model, source_relation, primary_key)) }}
{% endtest %}


{% macro default__test_zync_history_one_current(model, source_relation, primary_key=none) %}
{%- set names = zync_mirror_key_names(source_relation, primary_key) -%}
{%- set quoted = [] -%}
{%- for name in names -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
select {{ quoted | join(', ') }}, count(*) as current_versions, count(`valid_to`) as ended_current_versions
from {{ model }}
where `is_current`
group by {{ quoted | join(', ') }}
having count(*) > 1 or count(`valid_to`) > 0
{% endmacro %}
