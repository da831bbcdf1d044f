{#
  The view of the tested mirror's rows (zync_mirror_rows_relation), which
  every run of the mirror replaces; a mirror never run has none.
#}
{% macro zync_mirror_test_rows(mirror_relation) -%}
  {%- set rows = zync_mirror_rows_relation(mirror_relation) -%}
  {%- if execute and load_relation(rows) is none -%}
    {%- do exceptions.raise_compiler_error(
      "zync: " ~ rows ~ " (the rows of mirror " ~ mirror_relation ~ ") is missing: `dbt run` the mirror before testing it") -%}
  {%- endif -%}
  {{ return(rows) }}
{%- endmacro %}
