{#
  The default value columns of a history model with `hard_deletes:
  new_record`, as one struct like zync_mirror_typed_after's: `value`.`after`
  typed, except for a delete, whose row is `value`.`before` (the row as it
  was deleted; with PostgreSQL's default replica identity only its key)
  typed the same way: every note on a field of value.after (Debezium's
  logical types, defaults, the entry's `types:`) applies to the same field
  of value.before, so both sides of the if() have one type.
#}
{% macro zync_history_typed_image(source_relation, types=none, notes=none) -%}
  {%- if not execute -%}
    {{ return("if(`value`.`op` = 'd', `value`.`before`, `value`.`after`)") }}
  {%- endif -%}
  {%- set notes = zync_mirror_after_notes(source_relation, types, notes) -%}
  {%- set both = {} -%}
  {%- for part in ('names', 'defaults', 'types') if notes.get(part) -%}
    {%- set twins = dict(notes[part]) -%}
    {%- for name, note in notes[part].items() if (name | lower).startswith('value.after.') -%}
      {%- do twins.update({'value.before.' ~ name[('value.after.' | length):]: note}) -%}
    {%- endfor -%}
    {%- do both.update({part: twins}) -%}
  {%- endfor -%}
  {%- do notes.update(both) -%}
  {%- set after = zync_typed_column(source_relation, 'value.after', notes) -%}
  {%- set before = zync_typed_column(source_relation, 'value.before', notes) -%}
  {{ return("if(`value`.`op` = 'd', " ~ before ~ ", " ~ after ~ ")") }}
{%- endmacro %}
