{#
  The mirror's value columns in the model's rows (the view `rows`), as
  [{name, expression (SQL over a row of `rows`), data_type}, ...]: every
  column but the key's (`key`, names) and zync's own (`_zync_...`); when the
  model has the default struct of value.after (zync_mirror_after_column),
  each of its fields not named like a key column (case-insensitive, as Spark
  resolves names). Asked of Spark's analyzer (`describe query`: no data is
  read). `after_only`: the model's settings say its value columns are that
  struct's fields (`columns: after`, as `zync etl compile` writes the
  default): its other columns are the key's and zync's own, so only the
  struct is asked, a statement less.
#}
{% macro zync_mirror_columns(rows, key, after_only=false) -%}
  {%- set found = [] -%}
  {%- if not execute -%}
    {{ return(found) }}
  {%- endif -%}
  {%- set taken = key | map('lower') | list -%}
  {%- set after = zync_mirror_after_column() -%}
  {%- set top = [[after]] if after_only else run_query('describe query select * from ' ~ rows).rows -%}
  {%- for row in top -%}
    {%- if row[0] | lower == after -%}
      {%- for field in run_query('describe query select ' ~ adapter.quote(after) ~ '.* from ' ~ rows).rows if field[0] | lower not in taken -%}
        {%- do found.append({'name': field[0], 'expression': adapter.quote(after) ~ '.' ~ adapter.quote(field[0]), 'data_type': field[1]}) -%}
      {%- endfor -%}
    {%- elif row[0] | lower not in taken and not (row[0] | lower).startswith('_zync_') -%}
      {%- do found.append({'name': row[0], 'expression': adapter.quote(row[0]), 'data_type': row[1]}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(found) }}
{%- endmacro %}
