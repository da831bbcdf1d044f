{#
  The default source time of a change, for the re-snapshot guard:
  Debezium's `value`.`source`.`ts_ms` (when the change was made in the
  database), or the envelope's `value`.`ts_ms`, or null when neither exists.
  Read from the value's type in `raw_columns` (zync_mirror_raw_columns,
  described here when not given) where it can say (zync_mirror_struct_fields).
#}
{% macro zync_mirror_source_ts(source_relation, raw_columns=none) -%}
  {%- if not execute -%}
    {{ return('null') }}
  {%- endif -%}
  {%- set raw_columns = raw_columns if raw_columns is not none else zync_mirror_raw_columns(source_relation) -%}
  {%- set value_types = {} -%}
  {%- for name, type in zync_mirror_struct_fields(source_relation, '`value`', raw_columns['value']) -%}
    {%- do value_types.update({name | lower: type}) -%}
  {%- endfor -%}
  {%- set source_type = value_types.get('source') -%}
  {%- if 'source' in value_types and (source_type is none or source_type.startswith('struct')) -%}
    {%- set source_names = zync_mirror_struct_fields(source_relation, '`value`.`source`', source_type) | map('first') | map('lower') | list -%}
    {%- if 'ts_ms' in source_names -%}
      {{ return('`value`.`source`.`ts_ms`') }}
    {%- endif -%}
  {%- endif -%}
  {{ return('`value`.`ts_ms`' if 'ts_ms' in value_types else 'null') }}
{%- endmacro %}
