{#
  The key's and the row's columns of a history model (`history_relation`):
  every column but the versions' own (valid_from, valid_to, is_current) and
  zync's (`_zync_...`), in the table's order, as names.
#}
{% macro zync_history_value_columns(history_relation) -%}
  {%- set found = [] -%}
  {%- for column in adapter.get_columns_in_relation(history_relation)
        if column.name | lower not in ('valid_from', 'valid_to', 'is_current') and not (column.name | lower).startswith('_zync_') -%}
    {%- do found.append(column.name) -%}
  {%- endfor -%}
  {{ return(found) }}
{%- endmacro %}
