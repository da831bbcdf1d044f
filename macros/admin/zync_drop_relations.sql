{#
  Drops tables by name in the target schema (used to start a demo afresh):
  `dbt run-operation zync_drop_relations --args '{names: [raw_invoices]}'`.
#}
{% macro zync_drop_relations(names) %}
  {% for name in names %}
    {% do zync_execute('drop table if exists ' ~ adapter.quote(target.schema) ~ '.' ~ adapter.quote(name)) %}
  {% endfor %}
{% endmacro %}
