{#
  Sets on an existing mirror each table property of the model's config
  (`properties`, {name: value}) that it lacks or holds another value of: a
  mirror built before the property was generated (deletion vectors) gets it
  on its next incremental run, not only on a rebuild. A property commit
  changes no row, so the cursor stays vouched for (zync_mirror_committed_cursor).
#}
{% macro zync_mirror_apply_properties(mirror_relation, properties) -%}
  {%- if not properties -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set held = {} -%}
  {%- for row in run_query('show tblproperties ' ~ mirror_relation).rows -%}
    {%- do held.update({row[0] | lower: row[1] | string | lower}) -%}
  {%- endfor -%}
  {%- set missing = [] -%}
  {%- for name, value in properties.items() if held.get(name | lower) != value | string | lower -%}
    {%- do missing.append("'" ~ name ~ "' = '" ~ value ~ "'") -%}
  {%- endfor -%}
  {%- if missing -%}
    {%- call statement('apply_properties') -%}
      alter table {{ mirror_relation }} set tblproperties ({{ missing | join(', ') }})
    {%- endcall -%}
  {%- endif -%}
{%- endmacro %}
