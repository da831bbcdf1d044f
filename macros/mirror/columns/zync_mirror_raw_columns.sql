{#-
  The raw table's top-level columns as {name: Spark type text}, from one
  describe: the key's and the value's structs as zync_struct_fields reads
  them, so the key's field names and the source time come from it without a
  statement each. The model's select reads it once and passes it on
  (`raw_columns=raw_columns`).
-#}
{% macro zync_mirror_raw_columns(source_relation) -%}
  {%- set found = {} -%}
  {%- if not execute -%}
    {{ return(found) }}
  {%- endif -%}
  {%- for column in adapter.get_columns_in_relation(source_relation) -%}
    {%- do found.update({column.name | lower: column.data_type}) -%}
  {%- endfor -%}
  {%- for name in ('key', 'value') if name not in found -%}
    {%- do exceptions.raise_compiler_error(source_relation ~ " has no `" ~ name ~ "` column: is it a raw table written by `zync from-kafka`?") -%}
  {%- endfor -%}
  {{ return(found) }}
{%- endmacro %}
