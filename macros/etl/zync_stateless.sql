{#
  A stateless rule: one transformation event per pending record of one
  input that passes `where`. The caller's block is the projection over
  `in_record` and the lookups the rule joins (zync_lookup_joins).
#}
{% macro zync_stateless(input, where=none, after=[], lookups=[]) -%}
select
    array({{ zync_coordinates('in_record') }}) as consumed,
    {{ zync_ordering('in_record') }} as ordering,
    {{ caller() }}
from {{ input }} as in_record
{{- zync_not_consumed_by('in_record', after) }}
{{- zync_lookup_joins(lookups) }}
-- a replay of an earlier record (zync_replays) takes part in no event
where in_record.zync_replay_of is null
{%- if lookups %}
    and ({{ zync_lookups_unique(lookups, 'in_record') }})
{%- endif %}
{%- if where %}
    and ({{ where }})
{%- endif %}
{%- endmacro %}
