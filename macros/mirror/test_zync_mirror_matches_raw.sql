{#
  Data test: the mirror's live keys are exactly the live keys of its raw
  history, rebuilt from scratch by the same rules (zync_mirror_rows over the
  whole raw table). Proves the incremental MERGEs never drift from a
  rebuild. Fails with one row per key only in one of the two, so its row
  count check covers "the mirror's row count equals the live keys".
  Scans the raw history: meant for small data and CI.
#}
{% test zync_mirror_matches_raw(model, source_relation, topic, delete, primary_key=none, source_ts=none) %}
{%- set key = zync_mirror_key_columns(source_relation, primary_key) -%}
{%- set quoted = [] -%}
{%- for name, expression in key -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
with rebuilt as (
    {{ zync_mirror_rows(source_relation, topic=topic, delete='hard', key=key, columns=[],
                        source_ts=zync_mirror_source_ts(source_relation, source_ts)) | indent(4) }}
),

mirror_keys as (
    select {{ quoted | join(', ') }} from {{ model }}
    {%- if delete == 'soft' %} where not `_zync_deleted`{% endif %}
),

raw_keys as (
    select {{ quoted | join(', ') }} from rebuilt
)

select 'in the mirror, not live in the raw history' as problem, * from (select * from mirror_keys except all select * from raw_keys)
union all
select 'live in the raw history, not in the mirror' as problem, * from (select * from raw_keys except all select * from mirror_keys)
{% endtest %}
