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
{% macro zync_debezium_typed(expression, connect_name) -%}
  {{ return(adapter.dispatch('zync_debezium_typed', 'zync')(expression, connect_name)) }}
{%- endmacro %}

{% macro default__zync_debezium_typed(expression, connect_name) -%}
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
    {{ return(zync_variable_scale_decimal(e)) }}
  {%- endif -%}
  {{ return(e) }}
{%- endmacro %}


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
  path (e.g. value.after), keeping a null struct null.
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
  {%- set typed = zync_debezium_typed(sql, notes.names[path]) if path in notes.names else sql -%}
  {%- if typed != sql -%}
    {{ return(typed) }}
  {%- endif -%}
  {%- set below = [] -%}
  {%- for name in (notes.names | list) + (notes.defaults | list) if name.startswith(path ~ '.') -%}{%- do below.append(name) -%}{%- endfor -%}
  {%- if not below -%}
    {{ return(sql) }}
  {%- endif -%}
  {%- set fields = [] -%}
  {%- for row in run_query('describe query select ' ~ quoted | join('.') ~ '.* from ' ~ relation).rows -%}
    {%- do fields.append(dbt.string_literal(row[0]) ~ ', ' ~ zync_typed_column(relation, path ~ '.' ~ row[0], notes, alias)) -%}
  {%- endfor -%}
  {{ return('case when ' ~ sql ~ ' is null then null else named_struct(' ~ fields | join(', ') ~ ') end') }}
{%- endmacro %}
