{#
  The cursor of each mirror table named in `tables` (text: schema.table, comma-separated; a
  mirror's base, or a table under the mirror's own name) as JSON, {"schema.table": {partition:
  offset}}: zync_mirror_current_cursor, the cursor the mirror's runs read, rendered for
  `zync etl status` (service/etl_status.py) so that it never works the cursor out another way.
#}
{% macro zync_mirror_cursors_json(tables) -%}
  {%- if not execute -%}
    {{ return('{}') }}
  {%- endif -%}
  {%- set cursors = {} -%}
  {%- for name in tables.split(',') if name -%}
    {%- set schema, identifier = name.split('.', 1) -%}
    {%- set relation = api.Relation.create(schema=schema, identifier=identifier, type='table') -%}
    {%- do cursors.update({name: zync_mirror_current_cursor(relation)}) -%}
  {%- endfor -%}
  {{ return(tojson(cursors)) }}
{%- endmacro %}
