{#
  The `zync_mirror` materialization: a merge-on-read current-state mirror.

  The model's name is a VIEW (zync_mirror_view_sql) over two things: the
  base, a Delta table `<mirror>__base` (zync_mirror_base_relation) holding
  the mirror folded up to a cursor, and the raw changes past that cursor,
  applied as a SELECT by the MERGE's rules. A query of the mirror therefore
  holds every change ingest has committed, with no run in between; a run
  only folds: it moves the base's cursor and makes the view anew.

  dbt-spark 1.11's `incremental` materialization accepts only its own
  strategies (append, merge, insert_overwrite, microbatch) and its `merge`
  can neither delete nor guard an update, so mirrors get this small
  materialization, modelled on dbt-spark's incremental one:
  - the model's select (every raw change as the mirror's columns, as
    `zync etl compile` writes it) becomes the view `<mirror>__raw_changes`
    (zync_mirror_rows_relation), which the machinery and the data tests read
    (zync_mirror_changes.sql);
  - a mirror stored as a Delta table under its own name (before it had a
    base) is renamed to its base first: its history, and the cursor its
    commits carry, come along (zync_mirror_name is the same for both);
  - no base yet and the invocation defers it (zync_mirror_defers_base: a
    small first build in `zync run`): only the view, over every raw change;
  - no base yet (or --full-refresh): CREATE [OR REPLACE] TABLE ... AS the
    last change per key (a rebuild from the raw history; Delta keeps the
    history across a replace); its commit carries the cursor: the raw
    offsets read before it;
  - otherwise: the last change per key past the base's cursor as a cached
    temporary view, then one MERGE (see zync_mirror_merge_sql) = one Delta
    commit, which carries the cursor past the changes;
  - a mirror at its connector's transaction cut (`consistency: transaction`)
    takes the changes up to the cut as it stood when the run began
    (zync_mirror_cut_cursor), and its cursor moves to that cut: the bases
    of the connector folded in one run hold one cut exactly;
  - then the view, with the new cursor as literals. Between the MERGE's
    commit and the view's replacement the old view shows the same rows (see
    zync_mirror_view_sql). The view inlines the model's select rather than
    reading `<mirror>__raw_changes`: a Spark view keeps its columns' types,
    so a view over that view would fail once the raw table's schema grew.
  A table property the model's config names (deletion vectors) is set on a
  base made before it was (zync_mirror_apply_properties).
  Carrying the cursor in the commit (zync_mirror_cursor.sql) spares the next
  run a scan of the base for it. A run whose base another run moved since
  it read its changes writes nothing (zync_mirror_unmoved_cursor).
  The model's settings live in its meta (zync_mirror_settings).
#}
{% materialization zync_mirror, adapter='spark' %}
  {%- set settings = zync_mirror_settings() -%}
  {%- set view_relation = this.incorporate(type='view') -%}
  {%- set target_relation = zync_mirror_base_relation(this) -%}
  {%- do zync_mirror_migrate(this, target_relation) -%}
  {%- set existing_relation = load_relation(target_relation) -%}
  {%- set changes_relation = this.incorporate(path={"identifier": this.identifier ~ '__zync_changes'}).include(database=false, schema=false) -%}
  {%- set rows = zync_mirror_rows_relation(this) -%}
  {%- set full = existing_relation is none or should_full_refresh() -%}
  {#- A mirror at its connector's cut folds up to the cut as it stands now, and no further. -#}
  {%- set cut = zync_mirror_cut_cursor(settings.topic) -%}
  {#- The cursor is read first, as dbt renders a model before its pre-hooks: a run that another
      commits beside after this read writes nothing (zync_mirror_unmoved_cursor). -#}
  {%- set after = zync_mirror_cursor(target_relation) if not full else none -%}

  {{ run_hooks(pre_hooks) }}

  {#- The model's select, every raw change as the mirror's columns, as a view the machinery and the data tests read. -#}
  {%- call statement('rows_view') -%}
    create or replace view {{ rows }} as
    {{ compiled_code }}
  {%- endcall -%}
  {%- set key = zync_mirror_key_names(zync_mirror_source(), settings.primary_key) -%}
  {%- set columns = zync_mirror_columns(rows, key, settings.get('columns') == 'after') -%}
  {%- set folded_rows = rows if cut is none else '(select * from ' ~ rows ~ ' where ' ~ zync_mirror_upto_filter(cut) ~ ') as `_zync_rows`' -%}

  {%- if zync_mirror_defers_base(existing_relation) -%}
    {#- Only the view: the last change per key of every raw change, what a first build's base would hold.
        dbt reads the result of the statement named main. -#}
    {%- call statement('main') -%}
      {{ create_view_as(view_relation, zync_mirror_compact_sql(zync_mirror_changes(
           '(\n' ~ compiled_code ~ '\n) as `_zync_rows`', key, columns, settings.delete))) }}
    {%- endcall -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [view_relation]}) }}
  {%- elif full -%}
    {%- set cursor = zync_mirror_source_cursor(zync_mirror_source(), settings.topic) if cut is none else cut -%}
    {%- call zync_mirror_commit_carrying(target_relation, cursor) -%}
      {{ create_table_as(False, target_relation, zync_mirror_changes(folded_rows, key, columns, settings.delete)) }}
    {%- endcall -%}
  {%- else -%}
    {%- set changes_sql = zync_mirror_changes(folded_rows, key, columns, settings.delete, after=after, keep_deletes=true) -%}
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
    {%- for partition, offset in (cut or {}).items() -%}
      {%- do cursor.update({partition: [offset, cursor.get(partition, -1) | int] | max}) -%}
    {%- endfor -%}
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

  {#- The mirror's name: the base and the changes past the cursor just committed. -#}
  {%- set inlined_rows = '(\n' ~ compiled_code ~ '\n) as `_zync_rows`' -%}
  {%- call statement('view') -%}
    {{ create_view_as(view_relation, zync_mirror_compact_sql(zync_mirror_view_sql(
         target_relation, inlined_rows, key, columns, settings.delete, after=zync_mirror_cursor_filter(cursor)))) }}
  {%- endcall -%}

  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [view_relation]}) }}
{% endmaterialization %}
