{# A SQL string literal (topics are checked by the compiler; quotes are escaped anyway). #}
{% macro zync_string(text) -%}
'{{ text | replace("\\", "\\\\") | replace("'", "\\'") }}'
{%- endmacro %}
