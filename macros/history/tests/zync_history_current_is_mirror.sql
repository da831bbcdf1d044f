{#
  Data test: a history model's current versions are its mirror's rows (a
  soft mirror's rows not flagged deleted): the same keys with the same
  values in every column the history keeps. Fails with one row per row
  found on one side only (`_zync_side`: 'history' or 'mirror').
  Both are read at once but not in one snapshot: a mirror whose view shows
  changes the history has not folded yet differs until the history's next
  run (run both, then test).
#}
{% test zync_history_current_is_mirror(model, source_relation, mirror, primary_key=none) %}
{{ return(adapter.dispatch('test_zync_history_current_is_mirror', 'zync')(model, source_relation, mirror, primary_key)) }}
{% endtest %}


{% macro default__test_zync_history_current_is_mirror(model, source_relation, mirror, primary_key=none) %}
{%- set names = zync_history_value_columns(model) if execute else zync_mirror_key_names(source_relation, primary_key) -%}
{%- set mirror_names = [] -%}
{%- if execute -%}
  {%- for column in adapter.get_columns_in_relation(mirror) -%}{%- do mirror_names.append(column.name | lower) -%}{%- endfor -%}
{%- endif -%}
{%- set quoted = [] -%}
{%- for name in names -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
with

current_versions as (
    select {{ quoted | join(', ') }} from {{ model }} where `is_current`
),

mirror_rows as (
    select {{ quoted | join(', ') }} from {{ mirror }}
    {%- if '_zync_deleted' in mirror_names %}
    where not coalesce(`_zync_deleted`, false)
    {%- endif %}
)

select 'history' as `_zync_side`, * from (select * from current_versions except all select * from mirror_rows)
union all
select 'mirror' as `_zync_side`, * from (select * from mirror_rows except all select * from current_versions)
{% endmacro %}
