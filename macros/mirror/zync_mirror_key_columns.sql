{#
  The mirror's primary-key columns as [[name, SQL over the raw row], ...]:
  the given ones, or else every field of the raw table's Kafka key
  (`key`.`f`), or `key` itself when the key is not a record.
#}
{% macro zync_mirror_key_columns(source_relation, primary_key=none) -%}
  {%- if primary_key -%}
    {{ return(primary_key) }}
  {%- endif -%}
  {%- if not execute -%}
    {{ return([['key', '`key`']]) }}
  {%- endif -%}
  {%- set key_type = zync_mirror_column_type(source_relation, 'key') -%}
  {%- if not key_type.startswith('struct') -%}
    {{ return([['key', '`key`']]) }}
  {%- endif -%}
  {%- set names = run_query('select `key`.* from ' ~ source_relation ~ ' limit 0').column_names -%}
  {%- set notes = zync_field_notes(source_relation) -%}
  {%- set columns = [] -%}
  {%- for name in names -%}
    {%- do columns.append([name, zync_typed_column(source_relation, 'key.' ~ name, notes)]) -%}
  {%- endfor -%}
  {{ return(columns) }}
{%- endmacro %}


{#
  The mirror's other columns as [[name, SQL], ...]: the given ones, or else
  every field of `value`.`after` not already a key column (case-insensitive,
  as Spark resolves names), Debezium's semantic types typed
  (zync_typed_column). Looked up at each run, so new fields flow in.
#}
{% macro zync_mirror_value_columns(source_relation, columns, key) -%}
  {%- if columns is not none -%}
    {{ return(columns) }}
  {%- endif -%}
  {%- if not execute -%}
    {{ return([]) }}
  {%- endif -%}
  {%- set taken = key | map('first') | map('lower') | list -%}
  {%- set names = run_query('select `value`.`after`.* from ' ~ source_relation ~ ' limit 0').column_names -%}
  {%- set notes = zync_field_notes(source_relation) -%}
  {%- set result = [] -%}
  {%- for name in names if name | lower not in taken -%}
    {%- do result.append([name, zync_typed_column(source_relation, 'value.after.' ~ name, notes)]) -%}
  {%- endfor -%}
  {{ return(result) }}
{%- endmacro %}


{#
  The source time of a change, for the re-snapshot guard: the given SQL, or
  else Debezium's `value`.`source`.`ts_ms` (when the change was made in the
  database), or the envelope's `value`.`ts_ms`, or null when neither exists.
#}
{% macro zync_mirror_source_ts(source_relation, source_ts=none) -%}
  {%- if source_ts -%}
    {{ return(source_ts) }}
  {%- endif -%}
  {%- if not execute -%}
    {{ return('null') }}
  {%- endif -%}
  {%- set value_fields = run_query('select `value`.* from ' ~ source_relation ~ ' limit 0').column_names | map('lower') | list -%}
  {%- if 'source' in value_fields -%}
    {%- set source_fields = run_query('select `value`.`source`.* from ' ~ source_relation ~ ' limit 0').column_names | map('lower') | list -%}
    {%- if 'ts_ms' in source_fields -%}
      {{ return('`value`.`source`.`ts_ms`') }}
    {%- endif -%}
  {%- endif -%}
  {{ return('`value`.`ts_ms`' if 'ts_ms' in value_fields else 'null') }}
{%- endmacro %}


{#- The Spark type (as text) of one top-level column of a relation. -#}
{% macro zync_mirror_column_type(relation, name) -%}
  {%- for column in adapter.get_columns_in_relation(relation) if column.name | lower == name -%}
    {{ return(column.data_type | lower) }}
  {%- endfor -%}
  {%- do exceptions.raise_compiler_error(relation ~ " has no `" ~ name ~ "` column: is it a raw table written by `zync from-kafka`?") -%}
{%- endmacro %}
