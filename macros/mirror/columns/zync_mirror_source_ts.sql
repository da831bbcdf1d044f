{#
  The default source time of a change, for the re-snapshot guard:
  Debezium's `value`.`source`.`ts_ms` (when the change was made in the
  database), or the envelope's `value`.`ts_ms`, or null when neither exists.
  Read from the value's type (zync_struct_fields) in `raw_columns`
  (zync_mirror_raw_columns, described here when not given); Spark is asked
  for the fields only where that type cannot say.
#}
{% macro zync_mirror_source_ts(source_relation, raw_columns=none) -%}
  {%- if not execute -%}
    {{ return('null') }}
  {%- endif -%}
  {%- set raw_columns = raw_columns if raw_columns is not none else zync_mirror_raw_columns(source_relation) -%}
  {%- set value_fields = zync_struct_fields(raw_columns['value']) -%}
  {%- set value_types = {} -%}
  {%- if value_fields is not none -%}
    {%- for name, type in value_fields -%}{%- do value_types.update({name | lower: type}) -%}{%- endfor -%}
  {%- else -%}
    {%- for name in run_query('select `value`.* from ' ~ source_relation ~ ' limit 0').column_names -%}
      {%- do value_types.update({name | lower: none}) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set source_type = value_types.get('source') -%}
  {%- if 'source' in value_types and (source_type is none or source_type.startswith('struct')) -%}
    {%- set source_fields = zync_struct_fields(source_type) if source_type is not none else none -%}
    {%- set source_names = (source_fields | map('first') | list) if source_fields is not none
                           else run_query('select `value`.`source`.* from ' ~ source_relation ~ ' limit 0').column_names -%}
    {%- if 'ts_ms' in source_names | map('lower') | list -%}
      {{ return('`value`.`source`.`ts_ms`') }}
    {%- endif -%}
  {%- endif -%}
  {{ return('`value`.`ts_ms`' if 'ts_ms' in value_types else 'null') }}
{%- endmacro %}
