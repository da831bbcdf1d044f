{#
  Data test: the mirror's live rows are exactly those of its raw history
  rebuilt from scratch by the same rules (zync_mirror_changes over every row
  of the model's select, the view zync_mirror_rows_relation), key and value
  alike: every primary-key and value column is compared (as JSON, so maps
  and structs compare too; NULL and a struct of NULLs differ). Proves the
  incremental MERGEs never drift from a rebuild. Fails with one row per
  distinct row only in one of the two (or in one more often than in the
  other: `copies`), so it also covers "the mirror's row count equals the
  live keys".
  Scans the raw history: meant for small data and CI.
#}
{% test zync_mirror_matches_raw(model, source_relation, delete, primary_key=none) %}
{%- set rows = zync_mirror_test_rows(model) -%}
{%- set key = zync_mirror_key_names(source_relation, primary_key) -%}
{%- set columns = zync_mirror_columns(rows, key) -%}
{%- set fields = [] -%}
{%- for name in key + columns | map(attribute='name') | list -%}
  {%- do fields.append(dbt.string_literal(name) ~ ', ' ~ adapter.quote(name)) -%}
{%- endfor -%}
with rebuilt as (
    {{ zync_mirror_changes(rows, key, columns, delete='hard') | indent(4) }}
),

mirror_rows as (
    select to_json(named_struct({{ fields | join(', ') }})) as `row` from {{ model }}
    {%- if delete == 'soft' %} where not `_zync_deleted`{% endif %}
),

raw_rows as (
    select to_json(named_struct({{ fields | join(', ') }})) as `row` from rebuilt
),

-- One pass over both sides (EXCEPT ALL both ways computes each side twice): a distinct row's
-- copies in the mirror less its copies in the rebuild.
counted as (
    select `row`, sum(`_zync_side`) as `surplus`
    from (
        select `row`, 1 as `_zync_side` from mirror_rows
        union all
        select `row`, -1 as `_zync_side` from raw_rows
    )
    group by `row`
)

select
    case when `surplus` > 0 then 'in the mirror, not live in the raw history'
         else 'live in the raw history, not in the mirror' end as problem,
    `row`,
    abs(`surplus`) as copies
from counted
where `surplus` != 0
{% endtest %}
