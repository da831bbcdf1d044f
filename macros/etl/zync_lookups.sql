{#
  A rule's lookup joins: each lookup (a seed or model, given as ref()) is
  left joined to the rule's records on equalities, so a record without a
  matching lookup row still makes its event, with nulls for the lookup's
  columns. `lookups` is a list of {'name', 'relation', 'alias',
  'lookup_keys', 'record_keys'}: lookup_keys[i] = record_keys[i].

  Each lookup row carries how many rows share its join keys
  (zync_lookup_matches), for zync_lookups_unique below.
#}
{% macro zync_lookup_joins(lookups) -%}
{%- for lookup in lookups %}
left join (
    select
        {{ lookup.alias }}.*,
        count(*) over (partition by {{ lookup.lookup_keys | join(', ') }}) as zync_lookup_matches
    from {{ lookup.relation }} as {{ lookup.alias }}
) as {{ lookup.alias }}
    on {% for lookup_key in lookup.lookup_keys -%}
    {{ lookup_key }} = {{ lookup.record_keys[loop.index0] }}{{ "\n    and " if not loop.last }}
    {%- endfor %}
{%- endfor %}
{%- endmacro %}


{#
  A predicate that is true for every joined row and fails the run when a
  record matches several rows of a lookup: that record would make several
  events, and each input record must make exactly one. `record` is the alias
  whose Kafka coordinates the error names.
#}
{% macro zync_lookups_unique(lookups, record) -%}
{%- for lookup in lookups -%}
coalesce({{ lookup.alias }}.zync_lookup_matches, 1) = 1 or cast(raise_error(concat(
    {{ zync_string('zync: lookup ' ~ lookup.name ~ ' (' ~ lookup.relation ~ ') has ') }}, {{ lookup.alias }}.zync_lookup_matches,
    ' rows matching the record ', {{ record }}.kafka.topic, '@', {{ record }}.kafka.partition, ':', {{ record }}.kafka.offset,
    '; the columns a lookup is joined on must identify one row. Nothing was written.'
)) as boolean)
{%- if not loop.last %}
    and {% endif -%}
{%- endfor -%}
{%- endmacro %}
