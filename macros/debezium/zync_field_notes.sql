{#-
  What a raw table's writer schemas say of its fields, kept beside it by
  `zync from-kafka` (ingest/table.py) and read with one query:
  - names: {field path: Connect schema name}, e.g.
    {'value.after.due': 'io.debezium.time.Date'} ({} when the dbt var
    `zync_debezium_types` is false);
  - defaults: {field path: {'default': value, 'absentIn': [schema ids]}}
    for fields some writers lack (zync_with_default).
-#}
{% macro zync_field_notes(relation) -%}
  {%- set notes = {'names': {}, 'defaults': {}} -%}
  {%- if not execute -%}
    {{ return(notes) }}
  {%- endif -%}
  {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
    {%- if row[0] == 'zync.connectNames' and var('zync_debezium_types', true) -%}
      {%- do notes.update({'names': fromjson(row[1], {})}) -%}
    {%- elif row[0] == 'zync.fieldDefaults' -%}
      {%- do notes.update({'defaults': fromjson(row[1], {})}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(notes) }}
{%- endmacro %}
