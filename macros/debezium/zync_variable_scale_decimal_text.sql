{#
  A VariableScaleDecimal as its exact decimal text ('-12.50', '1234...890.123'),
  of any number of digits: the unscaled bytes go to Java's BigInteger as
  hex (commons-lang3's NumberUtils, on every Spark's class path), so no
  digit passes through a fixed-width number. Two's complement: a negative
  number's magnitude is its bytes inverted, plus one (on the hex text: the
  last digit that is not F goes up by one, the Fs after it become 0s).
  A mirror entry's `types: {field: string}` keeps this text: every digit
  Debezium sent, in PostgreSQL's scale.
#}
{% macro zync_variable_scale_decimal_text(e) -%}
case when {{ e }} is null then null else element_at(transform(array(named_struct(
    'negative', hex(substr({{ e }}.`value`, 1, 1)) >= '80',
    'inverted', translate(hex({{ e }}.`value`), '0123456789ABCDEF', 'FEDCBA9876543210'),
    'scale', {{ e }}.`scale`)), n -> element_at(transform(array(named_struct(
        'digits', reflect('org.apache.commons.lang3.math.NumberUtils', 'createBigInteger', concat('0x',
            case when n.negative then concat(
                regexp_extract(n.inverted, '^(.*?)([0-9A-E])(F*)$', 1),
                hex(cast(conv(regexp_extract(n.inverted, '^(.*?)([0-9A-E])(F*)$', 2), 16, 10) as int) + 1),
                repeat('0', length(regexp_extract(n.inverted, '^(.*?)([0-9A-E])(F*)$', 3))))
            else hex({{ e }}.`value`) end)),
        'negative', n.negative, 'scale', n.scale)), m -> concat(
            case when m.negative then '-' else '' end,
            case when m.scale > 0 then concat(
                substr(lpad(m.digits, greatest(length(m.digits), m.scale + 1), '0'), 1,
                       greatest(length(m.digits), m.scale + 1) - m.scale),
                '.',
                substr(lpad(m.digits, greatest(length(m.digits), m.scale + 1), '0'),
                       greatest(length(m.digits), m.scale + 1) - m.scale + 1))
            else concat(m.digits, repeat('0', -m.scale)) end)), 1)), 1) end
{%- endmacro %}
