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
{%- if where and lookups %}
where ({{ zync_lookups_unique(lookups, 'in_record') }})
    and ({{ where }})
{%- elif lookups %}
where {{ zync_lookups_unique(lookups, 'in_record') }}
{%- elif where %}
where {{ where }}
{%- endif %}
{%- endmacro %}
