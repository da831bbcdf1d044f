{#
  Debezium's semantic types as the Spark types a user queries.

  Debezium writes a date as an int of days, a `timestamptz` as an ISO
  string, an unconstrained `numeric` as a {scale, value} record...; the Avro
  schema says so only in each field's `connect.name`, which spark-avro drops.
  `zync from-kafka` keeps those names in the raw table's property
  `zync.connectNames` (ingest/table.py), and the raw table keeps the values
  as written. Mirrors and transforms read them through these macros, typed.
  Turn it off with the dbt var `zync_debezium_types: false`.
#}

{#-
  What a raw table's writer schemas say of its fields, kept beside it by
  `zync from-kafka` (ingest/table.py) and read with one query:
  - names: {field path: Connect schema name}, e.g.
    {'value.after.due': 'io.debezium.time.Date'} ({} when the dbt var
    `zync_debezium_types` is false);
  - defaults: {field path: {'default': value, 'absentIn': [schema ids]}}
    for fields some writers lack (zync_with_default).
-#}
{% macro zync_field_notes(relation) -%}
  {%- set notes = {'names': {}, 'defaults': {}} -%}
  {%- if not execute -%}
    {{ return(notes) }}
  {%- endif -%}
  {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
    {%- if row[0] == 'zync.connectNames' and var('zync_debezium_types', true) -%}
      {%- do notes.update({'names': fromjson(row[1], {})}) -%}
    {%- elif row[0] == 'zync.fieldDefaults' -%}
      {%- do notes.update({'defaults': fromjson(row[1], {})}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(notes) }}
{%- endmacro %}


{#
  The value of `expression`, written by Debezium as `connect_name`, as a
  Spark value: io.debezium.time.Date -> date; Timestamp, MicroTimestamp,
  NanoTimestamp (a `timestamp` column's wall clock, read as UTC) and
  ZonedTimestamp -> timestamp; Time, MicroTime, NanoTime -> 'HH:mm:ss.ffffff'
  text (Spark has no time type); VariableScaleDecimal -> decimal(38, 18),
  failing the query rather than losing a value that does not fit. Any other
  name (Json, Uuid, Enum, a Decimal spark-avro already made a decimal, ...)
  keeps the value as it is.
#}
{% macro zync_debezium_typed(expression, connect_name, path=none) -%}
  {{ return(adapter.dispatch('zync_debezium_typed', 'zync')(expression, connect_name, path)) }}
{%- endmacro %}

{% macro default__zync_debezium_typed(expression, connect_name, path=none) -%}
  {%- set e = expression -%}
  {%- if connect_name == 'io.debezium.time.Date' -%}
    {{ return('date_from_unix_date(' ~ e ~ ')') }}
  {%- elif connect_name == 'io.debezium.time.Timestamp' -%}
    {{ return('timestamp_millis(' ~ e ~ ')') }}
  {%- elif connect_name == 'io.debezium.time.MicroTimestamp' -%}
    {{ return('timestamp_micros(' ~ e ~ ')') }}
  {%- elif connect_name == 'io.debezium.time.NanoTimestamp' -%}
    {{ return('timestamp_micros(' ~ e ~ ' div 1000)') }}
  {%- elif connect_name == 'io.debezium.time.ZonedTimestamp' -%}
    {{ return('cast(' ~ e ~ ' as timestamp)') }}
  {%- elif connect_name in ('io.debezium.time.Time', 'io.debezium.time.MicroTime', 'io.debezium.time.NanoTime') -%}
    {%- set micros = {'io.debezium.time.Time': '(' ~ e ~ ' * 1000)', 'io.debezium.time.MicroTime': e,
                      'io.debezium.time.NanoTime': '(' ~ e ~ ' div 1000)'}[connect_name] -%}
    {{ return("case when " ~ e ~ " is not null then format_string('%02d:%02d:%02d.%06d', " ~ micros ~ " div 3600000000, "
              ~ micros ~ " div 60000000 % 60, " ~ micros ~ " div 1000000 % 60, " ~ micros ~ " % 1000000) end") }}
  {%- elif connect_name == 'io.debezium.data.VariableScaleDecimal' -%}
    {{ return(zync_variable_scale_decimal(e, path)) }}
  {%- endif -%}
  {{ return(e) }}
{%- endmacro %}


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


{#
  A field a record was written without, as Avro's schema resolution reads
  it: the reader schema's default. `ALTER TABLE ... ADD COLUMN qty int NOT
  NULL DEFAULT 0` gives PostgreSQL's older rows 0, and Debezium's schema
  `qty` with default 0, but the records of those rows written before the
  column existed hold no `qty`: the raw table keeps them null (what was
  written), and mirrors and transforms read them as the default. `sql` is
  the field, `parent` its record (null in a delete's `after`: kept null),
  `schema_id` the row's writer schema id, `default` {default, absentIn}.
#}
{% macro zync_with_default(sql, parent, schema_id, default) -%}
  {{ return('case when ' ~ parent ~ ' is not null and ' ~ schema_id ~ ' in (' ~ default['absentIn'] | join(', ')
            ~ ') then ' ~ zync_default_literal(default['default']) ~ ' else ' ~ sql ~ ' end') }}
{%- endmacro %}


{#- An Avro field default (boolean, number or string) as a Spark SQL literal. -#}
{% macro zync_default_literal(value) -%}
  {%- if value is boolean -%}
    {{ return('true' if value else 'false') }}
  {%- elif value is number -%}
    {{ return(value | string) }}
  {%- endif -%}
  {{ return("'" ~ (value | string | replace("\\", "\\\\") | replace("'", "\\'")) ~ "'") }}
{%- endmacro %}


{#
  {mirror column: its default as typed SQL} for the mirror's default columns
  (the fields of `value`.`after`) that some of the raw table's writers lack:
  what a mirror row written before the column existed holds (zync_mirror's
  schema evolution fills them in).
#}
{% macro zync_after_defaults(relation) -%}
  {%- set notes = zync_field_notes(relation) -%}
  {%- set found = {} -%}
  {%- for path, default in notes.defaults.items() if path.startswith('value.after.') and path.count('.') == 2 -%}
    {%- set literal = zync_default_literal(default['default']) -%}
    {%- do found.update({path.split('.')[2] | lower: zync_debezium_typed(literal, notes.names[path]) if path in notes.names else literal}) -%}
  {%- endfor -%}
  {{ return(found) }}
{%- endmacro %}


{#
  A raw table's top-level column (`key` or `value`) with every field named in
  `notes` (zync_field_notes) typed and defaulted; fields and structs without
  a note are passed as they are. Rebuilds only the structs on a noted field's
  path (e.g. value.after), keeping a null struct null. `notes` may also hold
  `types`: {lower-case field path: Spark type} that a user asked for (a
  mirror entry's `types:`), applied after Debezium's typing; `string` for a
  VariableScaleDecimal is its exact decimal text.
#}
{% macro zync_typed_column(relation, path, notes, alias=none) -%}
  {%- set prefix = (alias ~ '.') if alias else '' -%}
  {%- set quoted = [] -%}
  {%- for part in path.split('.') -%}{%- do quoted.append(adapter.quote(part)) -%}{%- endfor -%}
  {%- set sql = prefix ~ quoted | join('.') -%}
  {%- if path in notes.defaults and quoted | length > 1 -%}
    {%- set schema_id = prefix ~ '`kafka`.' ~ adapter.quote(path.split('.')[0] ~ '_schema_id') -%}
    {%- set sql = zync_with_default(sql, prefix ~ quoted[:-1] | join('.'), schema_id, notes.defaults[path]) -%}
  {%- endif -%}
  {#- A name that types the value (a date, a VariableScaleDecimal record) ends here; a record's own
      name (Debezium's Value and Envelope records carry one too) does not: its fields are typed. -#}
  {%- set wanted = (notes.types or {}).get(path | lower) -%}
  {%- if wanted and notes.names.get(path) == 'io.debezium.data.VariableScaleDecimal' and wanted | lower == 'string' -%}
    {{ return(zync_variable_scale_decimal_text(sql)) }}
  {%- endif -%}
  {%- set typed = zync_debezium_typed(sql, notes.names[path], path) if path in notes.names else sql -%}
  {%- if wanted -%}
    {{ return('cast(' ~ typed ~ ' as ' ~ wanted ~ ')') }}
  {%- elif typed != sql -%}
    {{ return(typed) }}
  {%- endif -%}
  {%- set below = [] -%}
  {%- for name in (notes.names | list) + (notes.defaults | list) + ((notes.types or {}) | list)
        if (name | lower).startswith((path ~ '.') | lower) -%}{%- do below.append(name) -%}{%- endfor -%}
  {%- if not below -%}
    {{ return(sql) }}
  {%- endif -%}
  {%- set fields = [] -%}
  {%- for row in run_query('describe query select ' ~ quoted | join('.') ~ '.* from ' ~ relation).rows -%}
    {%- do fields.append(dbt.string_literal(row[0]) ~ ', ' ~ zync_typed_column(relation, path ~ '.' ~ row[0], notes, alias)) -%}
  {%- endfor -%}
  {{ return('case when ' ~ sql ~ ' is null then null else named_struct(' ~ fields | join(', ') ~ ') end') }}
{%- endmacro %}
