{#
  The relations of a schema, for dbt's relation cache: dbt-spark's own query
  (`SHOW TABLE EXTENDED ... LIKE '*'`) unless ZYNC_RELATION_NAMES_ONLY is set,
  as `zync run` sets it for its own runs.

  SHOW TABLE EXTENDED asks the catalog for each relation's whole metadata, one
  metastore call each: ~13 ms a relation here, 8 s for the 600-800 relations
  of a 200-table database (raw tables, mirror bases and views), paid by every
  `dbt run` before its first model. A run needs only each relation's name and
  whether it is a view (materializations look relations up in the cache); two
  listings give those, one metastore call each: SHOW TABLES (every name) and
  SHOW VIEWS (the views among them). What this leaves out, the columns and
  the provider, only `dbt docs generate`'s catalog reads, and `dbt` run by a
  person lists relations as dbt-spark does. A table listed so is not marked
  Delta: dbt-spark then drops a table before a full refresh rather than
  replacing it, which `zync run` never does.
  Returns the rows dbt-spark's adapter reads from SHOW TABLE EXTENDED:
  (schema, name, is temporary, information).
#}
{% macro spark__list_relations_without_caching(relation) %}
  {%- if not env_var('ZYNC_RELATION_NAMES_ONLY', '') -%}
    {% call statement('list_relations_without_caching', fetch_result=True) -%}
      show table extended in {{ relation.schema }} like '*'
    {% endcall %}
    {{ return(load_result('list_relations_without_caching').table) }}
  {%- endif -%}
  {% call statement('list_relation_names', fetch_result=True) -%}
    show tables in {{ relation.schema }}
  {% endcall %}
  {% call statement('list_view_names', fetch_result=True) -%}
    show views in {{ relation.schema }}
  {% endcall %}
  {%- set views = [] -%}
  {%- for row in load_result('list_view_names').table -%}
    {%- do views.append((row[0], row[1])) -%}
  {%- endfor -%}
  {%- set rows = [] -%}
  {%- for row in load_result('list_relation_names').table -%}
    {%- set kind = 'VIEW' if (row[0], row[1]) in views else 'MANAGED' -%}
    {%- do rows.append([row[0], row[1], row[2], 'Type: ' ~ kind ~ '\n']) -%}
  {%- endfor -%}
  {{ return(rows) }}
{% endmacro %}
