{#
  The mirror's columns where the model leaves them to the defaults, found
  in the raw table at each run (so new fields flow in), and the columns of
  the model's rows as the machinery reads them.
#}

{#
  The default primary key as [[name, SQL over the raw row], ...]: every
  field of the raw table's Kafka key (`key`.`f`, Debezium's semantic types
  typed: zync_typed_column), or `key` itself when the key is not a record.
#}
{% macro zync_mirror_key_columns(source_relation) -%}
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


{#- The default primary key in the model's select: `key`.`f` as `f`, ... (zync_mirror_key_columns). -#}
{% macro zync_mirror_key_fields(source_relation) -%}
  {%- set projection = [] -%}
  {%- for name, expression in zync_mirror_key_columns(source_relation) -%}
    {%- do projection.append(expression ~ ' as ' ~ adapter.quote(name)) -%}
  {%- endfor -%}
  {{ return(projection | join(',\n    ')) }}
{%- endmacro %}


{#- The primary key's column names: the model's (its meta), else the default key's. -#}
{% macro zync_mirror_key_names(source_relation, primary_key=none) -%}
  {{ return(primary_key if primary_key else zync_mirror_key_columns(source_relation) | map('first') | list) }}
{%- endmacro %}


{#
  The default value columns in the model's select: `value`.`after` as one
  struct, its fields typed and defaulted as the key's are
  (zync_typed_column); the machinery spreads its fields into columns
  (zync_mirror_columns). `types`: {field: Spark type} from the mirror
  entry's `types:`, e.g. {'discount': 'string'} for the exact text of an
  unconstrained numeric wider than decimal(38, 18).
#}
{% macro zync_mirror_typed_after(source_relation, types=none) -%}
  {%- if not execute -%}
    {{ return('`value`.`after`') }}
  {%- endif -%}
  {%- set notes = zync_field_notes(source_relation) -%}
  {%- if types -%}
    {%- set asked = {} -%}
    {%- for name, type in types.items() -%}{%- do asked.update({('value.after.' ~ name) | lower: type}) -%}{%- endfor -%}
    {%- do notes.update({'types': asked}) -%}
  {%- endif -%}
  {{ return(zync_typed_column(source_relation, 'value.after', notes)) }}
{%- endmacro %}


{#
  The default source time of a change, for the re-snapshot guard:
  Debezium's `value`.`source`.`ts_ms` (when the change was made in the
  database), or the envelope's `value`.`ts_ms`, or null when neither exists.
#}
{% macro zync_mirror_source_ts(source_relation) -%}
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


{#
  The view of a mirror model's select (every raw change as the mirror's
  columns), `<mirror>__raw_changes` beside the mirror: the materialization
  replaces it on every run and reads its changes from it; the data tests
  rebuild the mirror from it.
#}
{% macro zync_mirror_rows_relation(mirror_relation) -%}
  {{ return(mirror_relation.incorporate(path={'identifier': mirror_relation.identifier ~ '__raw_changes'}, type='view')) }}
{%- endmacro %}


{#- The model's struct of value.after's fields when its columns are the default (compiler/mirrors.py AFTER_COLUMN). -#}
{% macro zync_mirror_after_column() -%}
  {{ return('_zync_after') }}
{%- endmacro %}


{#
  The mirror's value columns in the model's rows (the view `rows`), as
  [{name, expression (SQL over a row of `rows`), data_type}, ...]: every
  column but the key's (`key`, names) and zync's own (`_zync_...`); when the
  model has the default struct of value.after (zync_mirror_after_column),
  each of its fields not named like a key column (case-insensitive, as Spark
  resolves names). Asked of Spark's analyzer (`describe query`: no data is
  read).
#}
{% macro zync_mirror_columns(rows, key) -%}
  {%- set found = [] -%}
  {%- if not execute -%}
    {{ return(found) }}
  {%- endif -%}
  {%- set taken = key | map('lower') | list -%}
  {%- set after = zync_mirror_after_column() -%}
  {%- for row in run_query('describe query select * from ' ~ rows).rows -%}
    {%- if row[0] | lower == after -%}
      {%- for field in run_query('describe query select ' ~ adapter.quote(after) ~ '.* from ' ~ rows).rows if field[0] | lower not in taken -%}
        {%- do found.append({'name': field[0], 'expression': adapter.quote(after) ~ '.' ~ adapter.quote(field[0]), 'data_type': field[1]}) -%}
      {%- endfor -%}
    {%- elif row[0] | lower not in taken and not (row[0] | lower).startswith('_zync_') -%}
      {%- do found.append({'name': row[0], 'expression': adapter.quote(row[0]), 'data_type': row[1]}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(found) }}
{%- endmacro %}


{#- Whether the value columns come from value.after's fields (the default): their Avro defaults then apply. -#}
{% macro zync_mirror_columns_are_after(columns) -%}
  {%- set prefix = adapter.quote(zync_mirror_after_column()) ~ '.' -%}
  {{ return(columns | length > 0 and columns[0].expression.startswith(prefix)) }}
{%- endmacro %}


{#- The Spark type (as text) of one top-level column of a relation. -#}
{% macro zync_mirror_column_type(relation, name) -%}
  {%- for column in adapter.get_columns_in_relation(relation) if column.name | lower == name -%}
    {{ return(column.data_type | lower) }}
  {%- endfor -%}
  {%- do exceptions.raise_compiler_error(relation ~ " has no `" ~ name ~ "` column: is it a raw table written by `zync from-kafka`?") -%}
{%- endmacro %}
