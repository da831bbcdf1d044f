{#
  Seconds from a timestamp to now, as a number.
#}
{% macro zync_seconds_since(timestamp) -%}
{{ return(adapter.dispatch('zync_seconds_since', 'zync')(timestamp)) }}
{%- endmacro %}


{% macro default__zync_seconds_since(timestamp) -%}
{{ dbt.datediff(timestamp, dbt.current_timestamp(), 'second') }}
{%- endmacro %}


{% macro spark__zync_seconds_since(timestamp) -%}
(unix_timestamp(current_timestamp()) - unix_timestamp({{ timestamp }}))
{%- endmacro %}
