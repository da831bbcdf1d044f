{#
  A value a model's render leaves for its own materialization. dbt renders a
  model's SQL and then runs its materialization in another Jinja context, so
  nothing set in one is seen by the other; what the rows were read from (the
  cursors) must still reach the MERGE that writes them. The note is a Spark
  session setting named by dbt's invocation and the model, so two
  invocations sharing one session (`zync run`, threads in tests) never read
  each other's. Only `dbt run`/`dbt build` leave notes: nothing else writes.
#}
{% macro zync_leave_note(name, value) -%}
  {%- if execute and flags.WHICH in ('run', 'build') -%}
    {%- do run_query('set ' ~ zync_note_key(name) ~ '=' ~ tojson(value)) -%}
  {%- endif -%}
{%- endmacro %}
