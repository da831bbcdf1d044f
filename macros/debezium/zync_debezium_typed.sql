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
