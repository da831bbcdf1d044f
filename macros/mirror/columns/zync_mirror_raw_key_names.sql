{#- The field names of the raw table's Kafka key, or none when the key is not a record (or nothing runs). -#}
{% macro zync_mirror_raw_key_names(source_relation) -%}
  {%- if not execute or not zync_mirror_column_type(source_relation, 'key').startswith('struct') -%}
    {{ return(none) }}
  {%- endif -%}
  {{ return(run_query('select `key`.* from ' ~ source_relation ~ ' limit 0').column_names | list) }}
{%- endmacro %}
