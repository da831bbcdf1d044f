{# Whether a new cursor differs from the one this run started from (cursors only move forward). #}
{% macro zync_cursor_moved(topic, partition, offset, state) -%}
{%- set known = [] -%}
{%- for t, partitions in state.cursors | dictsort %}{% for p, o in partitions | dictsort -%}
{%- do known.append("(" ~ topic ~ " = " ~ zync_string(t) ~ " and " ~ partition ~ " = " ~ p ~ " and " ~ offset ~ " = " ~ o ~ ")") -%}
{%- endfor %}{% endfor -%}
{%- if known -%}
not ({{ known | join(' or ') }})
{%- else -%}
true
{%- endif -%}
{%- endmacro %}
