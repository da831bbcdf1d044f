{#
  The `main` statement (the caller's body), run as a Delta commit whose
  userMetadata carries `cursor` (see zync_mirror_cursor_metadata). A
  CREATE TABLE AS SELECT drops a writer's own userMetadata, so it goes
  through the session's default, set just around the statement.
#}
{% macro zync_mirror_commit_carrying(mirror_relation, cursor, name='main') -%}
  {%- set sql = caller() -%}
  {%- call statement('cursor_metadata') -%}
    set spark.databricks.delta.commitInfo.userMetadata = {{ zync_mirror_cursor_metadata(mirror_relation, cursor) }}
  {%- endcall -%}
  {%- call statement(name) -%}
    {{ sql }}
  {%- endcall -%}
  {%- call statement('reset_cursor_metadata') -%}
    reset spark.databricks.delta.commitInfo.userMetadata
  {%- endcall -%}
{%- endmacro %}
