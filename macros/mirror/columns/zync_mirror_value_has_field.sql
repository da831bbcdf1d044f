{#-
  Whether the raw table's `value` has the field at `path` (its names, outer
  first: ['source', 'lsn'] is `value`.`source`.`lsn`), each name compared
  case-insensitively as Spark resolves them. Read from the value's type in
  `raw_columns` (zync_mirror_raw_columns, described here when not given)
  where it can say (zync_mirror_struct_fields); a field whose type is known
  and not a struct has no fields.
-#}
{% macro zync_mirror_value_has_field(source_relation, path, raw_columns=none) -%}
  {%- set raw_columns = raw_columns if raw_columns is not none else zync_mirror_raw_columns(source_relation) -%}
  {%- set reached = {'sql': '`value`', 'type': raw_columns['value']} -%}
  {%- for name in path -%}
    {%- if not loop.first and not (reached.type is none or reached.type.startswith('struct')) -%}
      {{ return(false) }}
    {%- endif -%}
    {%- set fields = {} -%}
    {%- for field_name, field_type in zync_mirror_struct_fields(source_relation, reached.sql, reached.type) -%}
      {%- do fields.update({field_name | lower: field_type}) -%}
    {%- endfor -%}
    {%- if name | lower not in fields -%}
      {{ return(false) }}
    {%- endif -%}
    {%- do reached.update({'sql': reached.sql ~ '.' ~ adapter.quote(name), 'type': fields[name | lower]}) -%}
  {%- endfor -%}
  {{ return(true) }}
{%- endmacro %}
