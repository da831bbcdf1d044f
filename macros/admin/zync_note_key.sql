{# Spark accepts letters, digits, `_` and `.` in a setting's name. #}
{% macro zync_note_key(name) -%}
  {{ return('zync.note.' ~ modules.re.sub('[^0-9A-Za-z_]', '_', name) ~ '.'
            ~ modules.re.sub('[^0-9A-Za-z_]', '_', invocation_id ~ '__' ~ this.schema ~ '__' ~ this.identifier)) }}
{%- endmacro %}
