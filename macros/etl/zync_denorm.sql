{#
  A denorm rule: pairs pending `left` records with pending `right` records
  that agree on the join keys, and yields one transformation event per pair.
  The caller's block is the projection (key, value__<field>..., fields) over
  `left_record`, `right_record` and the lookups the rule joins to each pair.

  Pairing is one to one: within a join-key group the n-th left record (in
  offset order) pairs with the n-th right record, so no record takes part in
  two events and an unmatched record simply waits for its partner.
#}
{% macro zync_denorm(left, right, left_keys, right_keys, where=none, after=[], lookups=[]) -%}
select
    array({{ zync_coordinates('left_record') }}, {{ zync_coordinates('right_record') }}) as consumed,
    {{ zync_ordering('left_record') }} as ordering,
    {{ caller() }}
from (
    {{ zync_pairable(left, 'left_record', left_keys, where, after) | indent(4) }}
) as left_record
inner join (
    {{ zync_pairable(right, 'right_record', right_keys, where, after) | indent(4) }}
) as right_record
    on {% for left_key in left_keys -%}
    {{ left_key }} = {{ right_keys[loop.index0] }}
    and {% endfor -%}
    left_record.zync_pair = right_record.zync_pair
{{- zync_lookup_joins(lookups) }}
{%- if lookups %}
where {{ zync_lookups_unique(lookups, 'left_record') }}
{%- endif %}
{%- endmacro %}


{#
  One side of a denorm: the rule's candidate records, numbered within their
  join-key group so that the n-th left meets the n-th right.
#}
{% macro zync_pairable(input, alias, keys, where, after) -%}
select
    {{ alias }}.*,
    row_number() over (
        partition by {{ keys | join(', ') }}
        order by {{ alias }}.kafka.partition, {{ alias }}.kafka.offset
    ) as zync_pair
from {{ input }} as {{ alias }}
{{- zync_not_consumed_by(alias, after) }}
-- a replay of an earlier record (zync_replays) takes part in no event
where {{ alias }}.zync_replay_of is null
{%- if where %}
    and ({{ where }})
{%- endif %}
{%- endmacro %}
