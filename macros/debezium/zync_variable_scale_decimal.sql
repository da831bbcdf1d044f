{#
  Debezium's VariableScaleDecimal {scale, value: the unscaled number as
  big-endian two's-complement bytes} as decimal(38, 18), through its exact
  text (zync_variable_scale_decimal_text), so no digit passes through a
  double. A value that does not fit fails the query, and so does
  one with a non-zero digit past the 18th decimal place (a cast would round
  it: PostgreSQL's `1 / 7.0` has 20): nothing is silently lost. The message
  names the field (`path`) and the ways out: the mirror entry's
  `types: {field: string}` keeps every value's exact text.
#}
{% macro zync_variable_scale_decimal(e, path=none) -%}
{%- set field = path.split('.')[-1] if path else 'field' -%}
element_at(transform(array({{ zync_variable_scale_decimal_text(e) }}), text -> case
    when {{ e }} is null then null
    when text rlike '[.][0-9]{18}[0-9]*[1-9]' or cast(text as decimal(38, 18)) is null then raise_error(concat(
        'zync: {{ (path ~ ": ") if path else "" }}the VariableScaleDecimal ', text,
        ' does not fit decimal(38, 18) (at most 20 digits before the point and 18 after); to keep it exactly, give',
        ' the mirror entry `types: {{ "{" ~ field ~ ": string}" }}` (its exact decimal text), or set the connector''s',
        ' decimal.handling.mode to string; or give the column a scale in the database'))
    else cast(text as decimal(38, 18))
end), 1)
{%- endmacro %}
