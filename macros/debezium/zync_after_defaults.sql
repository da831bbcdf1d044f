{#
  {mirror column: its default as typed SQL} for the mirror's default columns
  (the fields of `value`.`after`) that some of the raw table's writers lack:
  what a mirror row written before the column existed holds (zync_mirror's
  schema evolution fills them in).
#}
{% macro zync_after_defaults(relation) -%}
  {%- set notes = zync_field_notes(relation) -%}
  {%- set found = {} -%}
  {%- for path, default in notes.defaults.items() if path.startswith('value.after.') and path.count('.') == 2 -%}
    {%- set literal = zync_default_literal(default['default']) -%}
    {%- do found.update({path.split('.')[2] | lower: zync_debezium_typed(literal, notes.names[path]) if path in notes.names else literal}) -%}
  {%- endfor -%}
  {{ return(found) }}
{%- endmacro %}
