{#
  Runs a statement that returns no rows (DROP, CACHE TABLE, RESET).
  Not run_query: it fetches a result, and through the Thrift Server (the
  `cluster` target, PyHive) a statement without a result set has nothing to
  fetch, so dbt fails with "'NoneType' object is not iterable".
#}
{% macro zync_execute(sql) -%}
  {%- do adapter.execute(sql, auto_begin=false, fetch=false) -%}
{%- endmacro %}
