{#
  Debezium's VariableScaleDecimal {scale, value: the unscaled number as
  big-endian two's-complement bytes} as decimal(38, 18). The bytes are read
  one by one into a decimal(38, 0) (up to 38 digits); the decimal point is
  then put in as text, so no digit passes through a double. A value that
  does not fit fails the query, and so does one with a non-zero digit past
  the 18th decimal place (a cast would round it: PostgreSQL's `1 / 7.0`
  has 20): nothing is silently lost.
#}
{% macro zync_variable_scale_decimal(e) -%}
case when {{ e }} is null then null else element_at(transform(array(element_at(transform(
    array(named_struct(
        -- two's complement: a negative number is -(its bytes inverted + 1)
        'unscaled', case when cast(conv(hex(substr({{ e }}.`value`, 1, 1)), 16, 10) as int) >= 128 then -(
            aggregate(
                transform(sequence(1, length({{ e }}.`value`)), i -> 255 - cast(conv(hex(substr({{ e }}.`value`, i, 1)), 16, 10) as int)),
                cast(0 as decimal(38, 0)),
                (acc, b) -> cast(acc * 256 + b as decimal(38, 0))
            ) + 1)
        else
            aggregate(
                transform(sequence(1, length({{ e }}.`value`)), i -> cast(conv(hex(substr({{ e }}.`value`, i, 1)), 16, 10) as int)),
                cast(0 as decimal(38, 0)),
                (acc, b) -> cast(acc * 256 + b as decimal(38, 0))
            )
        end,
        'scale', {{ e }}.`scale`
    )),
    n -> concat(
            case when n.unscaled < 0 then '-' else '' end,
            case when n.scale > 0 then concat(
                substr(lpad(cast(abs(n.unscaled) as string), greatest(length(cast(abs(n.unscaled) as string)), n.scale + 1), '0'), 1,
                       greatest(length(cast(abs(n.unscaled) as string)), n.scale + 1) - n.scale),
                '.',
                substr(lpad(cast(abs(n.unscaled) as string), greatest(length(cast(abs(n.unscaled) as string)), n.scale + 1), '0'),
                       greatest(length(cast(abs(n.unscaled) as string)), n.scale + 1) - n.scale + 1))
            else concat(cast(abs(n.unscaled) as string), repeat('0', -n.scale)) end
    )
), 1)), text -> case
    when text is null or text rlike '[.][0-9]{18}[0-9]*[1-9]' or cast(text as decimal(38, 18)) is null then raise_error(concat(
        'zync: the VariableScaleDecimal ', coalesce(text, 'of more than 38 digits'), ' does not fit decimal(38, 18) (at most 20 digits before the point and 18',
        ' after); set the connector''s decimal.handling.mode to string, or give the column a scale in the database'))
    else cast(text as decimal(38, 18))
end), 1) end
{%- endmacro %}
