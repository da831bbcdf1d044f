{#
  The default value columns in the model's select: `value`.`after` as one
  struct, its fields typed and defaulted as the key's are
  (zync_typed_column); the machinery spreads its fields into columns
  (zync_mirror_columns). `types`: {field: Spark type} from the mirror
  entry's `types:`, e.g. {'discount': 'string'} for the exact text of an
  unconstrained numeric wider than decimal(38, 18). `notes`: the raw
  table's field notes when the caller has read them (zync_field_notes).
#}
{% macro zync_mirror_typed_after(source_relation, types=none, notes=none) -%}
  {%- if not execute -%}
    {{ return('`value`.`after`') }}
  {%- endif -%}
  {%- set notes = zync_mirror_after_notes(source_relation, types, notes) -%}
  {{ return(zync_typed_column(source_relation, 'value.after', notes)) }}
{%- endmacro %}
