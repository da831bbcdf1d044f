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
  {%- if zync_mirror_value_has_field(source_relation, ['source', 'ts_ms'], raw_columns) -%}
    {{ return('`value`.`source`.`ts_ms`') }}
  {%- endif -%}
  {{ return('`value`.`ts_ms`' if zync_mirror_value_has_field(source_relation, ['ts_ms'], raw_columns) else 'null') }}
{%- endmacro %}
