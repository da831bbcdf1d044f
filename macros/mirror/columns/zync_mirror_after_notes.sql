{#
  The raw table's field notes (zync_field_notes, read here unless the
  caller has them: `notes`) with the mirror entry's `types:` ({field: Spark
  type}) as notes on value.after's fields: what zync_typed_column types
  `value`.`after` by.
#}
{% macro zync_mirror_after_notes(source_relation, types=none, notes=none) -%}
  {%- set notes = dict(notes if notes is not none else zync_field_notes(source_relation)) -%}
  {%- if types -%}
    {%- set asked = {} -%}
    {%- for name, type in types.items() -%}{%- do asked.update({('value.after.' ~ name) | lower: type}) -%}{%- endfor -%}
    {%- do notes.update({'types': asked}) -%}
  {%- endif -%}
  {{ return(notes) }}
{%- endmacro %}
