{#
  A value written as one struct expression (`value: in.value.after`) was
  compiled into its fields as the raw table had them. When the run starts,
  this checks the raw table still has exactly those fields: a field added by
  schema evolution would otherwise be dropped from every row without a word.
  `path` is the field path within the raw row, e.g. ['value', 'after'].
#}
{% macro zync_expect_struct_fields(relation, path, expected, rule) -%}
  {%- if execute -%}
    {%- set quoted = [] -%}
    {%- for name in path -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
    {%- set struct = quoted | join('.') -%}
    {%- set actual = run_query("select " ~ struct ~ ".* from " ~ relation ~ " limit 0").column_names | list -%}
    {%- if actual | map('lower') | sort | list != expected | map('lower') | sort | list -%}
      {{ exceptions.raise_compiler_error(
          "zync: " ~ rule ~ " takes its value's fields from " ~ struct ~ " of " ~ relation
          ~ ", compiled as " ~ expected | join(', ') ~ "; the table now has " ~ actual | join(', ')
          ~ ". Run `zync etl compile` again (and commit the models); nothing was written."
      ) }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
