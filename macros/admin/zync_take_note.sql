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
