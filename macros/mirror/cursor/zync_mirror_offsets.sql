{# {partition (string): offset} from a query returning (partition, offset) rows. #}
{% macro zync_mirror_offsets(sql) -%}
  {%- set offsets = {} -%}
  {%- for row in run_query(sql).rows -%}
    {%- do offsets.update({row[0] | string: row[1] | int}) -%}
  {%- endfor -%}
  {{ return(offsets) }}
{%- endmacro %}
