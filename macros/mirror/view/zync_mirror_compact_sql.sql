{#
  SQL text with each line's indentation and every blank or comment-only
  line (`-- ...`) dropped: a view's text is stored in the catalog, and
  Derby's Hive metastore keeps at most 32,700 characters of it, which a
  mirror of many columns reaches with the generated SQL's indentation. A
  line's own text is kept as it is (the generated SQL has no string
  literal over several lines).
#}
{% macro zync_mirror_compact_sql(sql) -%}
  {%- set kept = [] -%}
  {%- for line in sql.split('\n') -%}
    {%- set text = line | trim -%}
    {%- if text and not text.startswith('--') -%}{%- do kept.append(text) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(kept | join('\n')) }}
{%- endmacro %}
