{# The note zync_leave_note left for this model in this invocation, once (it is cleared unless `keep`); none if there is none. #}
{% macro zync_take_note(name, keep=false) -%}
  {%- if not (execute and flags.WHICH in ('run', 'build')) -%}
    {#- Only runs leave notes (zync_leave_note): a compile or docs render has none to ask for. -#}
    {{ return(none) }}
  {%- endif -%}
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
