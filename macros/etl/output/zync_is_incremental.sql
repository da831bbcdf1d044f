{#
  Whether this run of a zync model adds to its table (true) or builds it
  (false: no table yet, --full-refresh, or a model that is not an output,
  such as the `__pending` view): dbt's is_incremental() for the
  `zync_output` materialization, which dbt's own macro does not know.
#}
{% macro zync_is_incremental() -%}
  {%- if not execute or model.config.materialized not in ('zync_output', 'incremental') -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {{ return(relation is not none and relation.type == 'table' and not should_full_refresh()) }}
{%- endmacro %}
