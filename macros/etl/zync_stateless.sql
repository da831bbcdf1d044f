{#
  A stateless rule: one transformation event per pending record of one
  input that passes `where`. The caller's block is the projection over
  `in_record`.
#}
{% macro zync_stateless(input, where=none, after=[]) -%}
select
    array({{ zync_coordinates('in_record') }}) as consumed,
    {{ zync_ordering('in_record') }} as ordering,
    {{ caller() }}
from {{ input }} as in_record
{{- zync_not_consumed_by('in_record', after) }}
{%- if where %}
where {{ where }}
{%- endif %}
{%- endmacro %}
