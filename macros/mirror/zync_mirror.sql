{#
  The `zync_mirror` materialization: a current-state table kept by Delta MERGE.

  dbt-spark 1.11's `incremental` materialization accepts only its own
  strategies (append, merge, insert_overwrite, microbatch) and its `merge`
  can neither delete nor guard an update, so mirrors get this small
  materialization, modelled on dbt-spark's incremental one:
  - the model's select (every raw change as the mirror's columns, as
    `zync etl compile` writes it) becomes the view `<mirror>__raw_changes`
    (zync_mirror_rows_relation), which the machinery reads
    (zync_mirror_changes.sql);
  - no table yet (or --full-refresh): CREATE [OR REPLACE] TABLE ... AS the
    last change per key (a rebuild from the raw history; Delta keeps the
    history across a replace); its commit carries the cursor: the raw
    offsets read before it;
  - otherwise: the last change per key past the mirror's cursor as a cached
    temporary view, then one MERGE (see zync_mirror_merge_sql) = one Delta
    commit, which carries the cursor past the changes.
  A table property the model's config names (deletion vectors) is set on a
  mirror made before it was (zync_mirror_apply_properties).
  Carrying the cursor in the commit (zync_mirror_cursor.sql) spares the next
  run a scan of the mirror for it. A run whose mirror another run moved since
  it read its changes writes nothing (zync_mirror_unmoved_cursor).
  The model's settings live in its meta: {'zync_mirror': {topic, delete,
  primary_key (the key's column names, or none: the Kafka key's fields)}}.
#}
{% materialization zync_mirror, adapter='spark' %}
  {%- set settings = zync_mirror_settings() -%}
  {%- set target_relation = this -%}
  {%- set existing_relation = load_relation(this) -%}
  {%- set changes_relation = this.incorporate(path={"identifier": this.identifier ~ '__zync_changes'}).include(database=false, schema=false) -%}
  {%- set rows = zync_mirror_rows_relation(this) -%}
  {%- set full = existing_relation is none or should_full_refresh() -%}
  {#- The cursor is read first, as dbt renders a model before its pre-hooks: a run that another
      commits beside after this read writes nothing (zync_mirror_unmoved_cursor). -#}
  {%- set after = zync_mirror_cursor(this) if not full else none -%}

  {{ run_hooks(pre_hooks) }}

  {#- The model's select, every raw change as the mirror's columns, as a view the machinery and the data tests read. -#}
  {%- call statement('rows_view') -%}
    create or replace view {{ rows }} as
    {{ compiled_code }}
  {%- endcall -%}
  {%- set key = zync_mirror_key_names(zync_mirror_source(), settings.primary_key) -%}
  {%- set columns = zync_mirror_columns(rows, key) -%}

  {%- if full -%}
    {%- set cursor = zync_mirror_source_cursor(zync_mirror_source(), settings.topic) -%}
    {%- call zync_mirror_commit_carrying(target_relation, cursor) -%}
      {{ create_table_as(False, target_relation, zync_mirror_changes(rows, key, columns, settings.delete)) }}
    {%- endcall -%}
  {%- else -%}
    {%- set changes_sql = zync_mirror_changes(rows, key, columns, settings.delete, after=after, keep_deletes=true) -%}
    {%- call statement('create_changes') -%}
      {{ create_table_as(True, changes_relation, changes_sql) }}
    {%- endcall -%}
    {#- Cached once: Delta's MERGE reads its source twice (find the touched
        files, then write), and the row count decides the join below. -#}
    {%- call statement('cache_changes') -%}
      cache table {{ changes_relation }}
    {%- endcall -%}
    {%- set changes = run_query('select count(*) from ' ~ changes_relation).columns[0].values()[0] | int -%}
    {#- A nested field new in the changes evolves the mirror through MERGE's schema auto-merge. -#}
    {%- call statement('schema_evolution') -%}
      set spark.databricks.delta.schema.autoMerge.enabled = true
    {%- endcall -%}
    {%- set read_from = zync_mirror_unmoved_cursor(target_relation, changes_relation) -%}
    {%- do zync_mirror_apply_properties(target_relation, config.get('tblproperties') or {}) -%}
    {%- set merged = zync_mirror_evolve_schema(target_relation, changes_relation,
                                              zync_after_defaults(zync_mirror_source()) if zync_mirror_columns_are_after(columns) else {}) -%}
    {%- set cursor = zync_mirror_next_cursor(read_from, changes_relation) -%}
    {#- The changes' keys written into the MERGE (zync_mirror_key_filter) only up to a number of them:
        each of the MERGE's plans carries the list, and at 100,000 keys planning cost more than the
        filter saved (bench/mirror_merge.py: 20-23 s against 10-11 s at 1,000,000 rows; at 10,000
        keys it took a 10,000,000-row run from 14.6 to 8.8 s). -#}
    {%- set key_filter = zync_mirror_key_filter(changes_relation, key)
                         if 0 < changes <= var('zync_mirror_key_filter_rows', 10000) else none -%}
    {%- call zync_mirror_commit_carrying(target_relation, cursor) -%}
      {{ zync_mirror_merge_sql(target_relation, changes_relation, key, merged, settings.delete,
                               broadcast=changes <= var('zync_mirror_broadcast_rows', 2000000),
                               key_filter=key_filter) }}
    {%- endcall -%}
    {%- call statement('uncache_changes') -%}
      uncache table if exists {{ changes_relation }}
    {%- endcall -%}
  {%- endif -%}

  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}

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

{#
  The cursor this run read its changes from, checked against the mirror's
  cursor now. Another run (`zync run`, an analyst's `dbt run`) that committed
  in between may have applied newer changes to the same keys, and applying
  this run's older ones over them would go back in time for good (the
  cursor is past them); so the run stops, having written nothing. What is
  left is the moment between this check and the MERGE's read of the mirror;
  a commit after that read fails the MERGE (Delta's conflict check).
#}
{% macro zync_mirror_unmoved_cursor(mirror_relation, changes_relation) -%}
  {%- set current = zync_mirror_current_cursor(mirror_relation) -%}
  {%- set read_from = zync_take_note('mirror_cursor') -%}
  {%- if read_from is not none and read_from != current -%}
    {%- call statement('uncache_changes') -%}
      uncache table if exists {{ changes_relation }}
    {%- endcall -%}
    {{ exceptions.raise_compiler_error(
        'zync: another run of ' ~ zync_mirror_name(mirror_relation) ~ ' committed since this run read its changes'
        ~ ' (its cursor was ' ~ tojson(read_from) ~ ', is now ' ~ tojson(current) ~ ').'
        ~ ' This run wrote nothing; run it again.') }}
  {%- endif -%}
  {{ return(current) }}
{%- endmacro %}

{#
  Sets on an existing mirror each table property of the model's config
  (`properties`, {name: value}) that it lacks or holds another value of: a
  mirror built before the property was generated (deletion vectors) gets it
  on its next incremental run, not only on a rebuild. A property commit
  changes no row, so the cursor stays vouched for (zync_mirror_committed_cursor).
#}
{% macro zync_mirror_apply_properties(mirror_relation, properties) -%}
  {%- if not properties -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set held = {} -%}
  {%- for row in run_query('show tblproperties ' ~ mirror_relation).rows -%}
    {%- do held.update({row[0] | lower: row[1] | string | lower}) -%}
  {%- endfor -%}
  {%- set missing = [] -%}
  {%- for name, value in properties.items() if held.get(name | lower) != value | string | lower -%}
    {%- do missing.append("'" ~ name ~ "' = '" ~ value ~ "'") -%}
  {%- endfor -%}
  {%- if missing -%}
    {%- call statement('apply_properties') -%}
      alter table {{ mirror_relation }} set tblproperties ({{ missing | join(', ') }})
    {%- endcall -%}
  {%- endif -%}
{%- endmacro %}
