{#
  The `zync_output` materialization: how a zync output model writes.

  - No table yet (or --full-refresh): CREATE [OR REPLACE] TABLE ... AS the
    model, partitioned by `kind` (dbt-spark's own create_table_as).
  - Otherwise: one INSERT of the model's rows (zync_output_insert_sql) = one
    Delta commit, guarded so that two runs of one output never both write
    the same records. No temporary view and no MERGE: the model is computed
    once, straight into the table (a MERGE computed it twice and rewrote
    nothing; it cost 5-20 s of a run that now takes a fraction of it).
  - When the render counted no pending record in any input
    (zync_cache_pending), the model has no row to write: the statement is a
    select of nothing, no commit.

  The model's meta names its output topic (`zync_output_topic`), which the
  compiler writes; egress and `zync run` find output tables by it.
#}
{% materialization zync_output, adapter='spark' %}
  {%- set existing_relation = load_relation(this) -%}
  {%- set target_relation = this.incorporate(type='table') -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing_relation is not none and existing_relation.is_view -%}
    {%- do adapter.drop_relation(existing_relation) -%}
    {%- set existing_relation = none -%}
  {%- endif -%}

  {%- call statement('main') -%}
    {%- if existing_relation is none or should_full_refresh() -%}
      {{ create_table_as(False, target_relation, compiled_code) }}
    {%- else -%}
      {{ zync_output_insert_sql(target_relation, compiled_code) }}
    {%- endif -%}
  {%- endcall -%}

  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
