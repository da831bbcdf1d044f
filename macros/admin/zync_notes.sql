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


{# The note zync_leave_note left for this model in this invocation, once (it is cleared unless `keep`); none if there is none. #}
{% macro zync_take_note(name, keep=false) -%}
  {%- set key = zync_note_key(name) -%}
  {%- set stored = run_query('set ' ~ key).rows[0][1] -%}
  {%- if stored == '<undefined>' -%}
    {{ return(none) }}
  {%- endif -%}
  {%- if not keep -%}
    {%- do zync_execute('reset ' ~ key) -%}
  {%- endif -%}
  {{ return(fromjson(stored)) }}
{%- endmacro %}


{# Spark accepts letters, digits, `_` and `.` in a setting's name. #}
{% macro zync_note_key(name) -%}
  {{ return('zync.note.' ~ modules.re.sub('[^0-9A-Za-z_]', '_', name) ~ '.'
            ~ modules.re.sub('[^0-9A-Za-z_]', '_', invocation_id ~ '__' ~ this.schema ~ '__' ~ this.identifier)) }}
{%- endmacro %}
