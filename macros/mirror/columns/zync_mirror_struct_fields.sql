{#-
  The fields of a struct column of the raw table at `path` (SQL, e.g.
  `value`.`source`), as [[name, type text or none], ...]: read from its type
  text (zync_struct_fields) when that says them without doubt, else asked of
  Spark (`select <path>.* ... limit 0`: the names, no types).
-#}
{% macro zync_mirror_struct_fields(source_relation, path, type_text) -%}
  {%- set fields = zync_struct_fields(type_text) if type_text is not none else none -%}
  {%- if fields is none -%}
    {%- set fields = [] -%}
    {%- for name in run_query('select ' ~ path ~ '.* from ' ~ source_relation ~ ' limit 0').column_names -%}
      {%- do fields.append([name, none]) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(fields) }}
{%- endmacro %}
