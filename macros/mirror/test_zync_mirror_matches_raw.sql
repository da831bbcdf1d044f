{#
  Data test: the mirror's live rows are exactly those of its raw history
  rebuilt from scratch by the same rules (zync_mirror_rows over the whole
  raw table), key and value alike: every primary-key and value column is
  compared (as JSON, so maps and structs compare too; NULL and a struct of
  NULLs differ). Proves the incremental MERGEs never drift from a rebuild.
  Fails with one row per row only in one of the two, so it also covers "the
  mirror's row count equals the live keys".
  Scans the raw history: meant for small data and CI.
#}
{% test zync_mirror_matches_raw(model, source_relation, topic, delete, primary_key=none, columns=none, source_ts=none) %}
{%- set key = zync_mirror_key_columns(source_relation, primary_key) -%}
{%- set compared = key + zync_mirror_value_columns(source_relation, columns, key) -%}
{%- set fields = [] -%}
{%- for name, expression in compared -%}
  {%- do fields.append(dbt.string_literal(name) ~ ', ' ~ adapter.quote(name)) -%}
{%- endfor -%}
with rebuilt as (
    {{ zync_mirror_rows(source_relation, topic=topic, delete='hard', key=key, columns=compared[key | length:],
                        source_ts=zync_mirror_source_ts(source_relation, source_ts)) | indent(4) }}
),

mirror_rows as (
    select to_json(named_struct({{ fields | join(', ') }})) as `row` from {{ model }}
    {%- if delete == 'soft' %} where not `_zync_deleted`{% endif %}
),

raw_rows as (
    select to_json(named_struct({{ fields | join(', ') }})) as `row` from rebuilt
)

select 'in the mirror, not live in the raw history' as problem, `row` from (select * from mirror_rows except all select * from raw_rows)
union all
select 'live in the raw history, not in the mirror' as problem, `row` from (select * from raw_rows except all select * from mirror_rows)
{% endtest %}
