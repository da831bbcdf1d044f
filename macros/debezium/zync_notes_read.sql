{#
  The part of a raw table's field notes (zync_field_notes) that `reads`, a
  list of field paths such as ['key', 'value.op', 'value.after.ID'], reaches:
  the notes of the paths read, of the paths below them (a rule reading
  `value.after` reads all of it) and above them. Notes of other fields are
  left out, so zync_typed_column carries those fields as written: a column
  no rule reads costs the plan nothing, and a value of it that no Spark type
  holds (a VariableScaleDecimal wider than decimal(38, 18)) never stops the
  model. Spark compares names case-insensitively, and so does this.
#}
{% macro zync_notes_read(notes, reads) -%}
  {%- set wanted = [] -%}
  {%- for path in reads -%}{%- do wanted.append(path | lower) -%}{%- endfor -%}
  {%- set kept = {'names': {}, 'defaults': {}} -%}
  {%- for kind in ('names', 'defaults') -%}
    {%- for path, note in notes[kind].items() -%}
      {%- set p = path | lower -%}
      {%- for w in wanted if p == w or p.startswith(w ~ '.') or w.startswith(p ~ '.') -%}
        {%- if loop.first -%}{%- do kept[kind].update({path: note}) -%}{%- endif -%}
      {%- endfor -%}
    {%- endfor -%}
  {%- endfor -%}
  {{ return(kept) }}
{%- endmacro %}
