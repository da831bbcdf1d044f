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
