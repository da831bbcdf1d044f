{#
  The select list an as-of read of a history model gives (zync_as_of and
  zync_as_of_cut alike): the key's and the row's columns (`names`, from
  zync_history_value_columns), then the version's valid_from, valid_to,
  operation and source transaction id.
#}
{% macro zync_as_of_columns(names) -%}
        {%- for name in names %}
        {{ adapter.quote(name) }},
        {%- endfor %}
        `valid_from`,
        `valid_to`,
        `_zync_op`,
        `_zync_transaction`
{%- endmacro %}
