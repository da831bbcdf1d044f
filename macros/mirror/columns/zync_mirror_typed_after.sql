{#
  The default value columns in the model's select: `value`.`after` as one
  struct, its fields typed and defaulted as the key's are
  (zync_typed_column); the machinery spreads its fields into columns
  (zync_mirror_columns).
#}
{% macro zync_mirror_typed_after(source_relation) -%}
  {%- if not execute -%}
    {{ return('`value`.`after`') }}
  {%- endif -%}
  {{ return(zync_typed_column(source_relation, 'value.after', zync_field_notes(source_relation))) }}
{%- endmacro %}
