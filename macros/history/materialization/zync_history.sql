{#
  The `zync_history` materialization: a mirror's history model (SCD type 2),
  an incremental Delta table with one row per version of each key
  (zync_history_versions says what a version is).

  The model's select (every raw change as the mirror's columns, with its
  source position and transaction, as `zync etl compile` writes it) becomes
  the view `<model>__raw_changes` (zync_mirror_rows_relation), as a mirror's
  does. Then:
  - no table yet (or --full-refresh): CREATE [OR REPLACE] TABLE ... AS the
    versions of every raw change; its commit carries the cursor (the raw
    offsets read before it), as a mirror's base does (zync_mirror_cursor.sql);
  - otherwise the changes past the table's cursor (zync_history_changes, a
    cached temporary view). None: nothing is written (no MERGE over an
    empty set). Else the versions of the keys they touch are made again from
    the versions kept for those keys and the changes
    (zync_history_events, zync_history_versions, a cached temporary view),
    and one MERGE (zync_history_merge_sql) = one Delta commit inserts the
    new versions and repairs the kept ones' valid_to / is_current; it
    carries the cursor past the changes. A run reads its changes and its
    changed keys' versions (a key filter lets Delta skip the other files,
    zync_mirror_key_filter), not the whole history.
  The table has deletion vectors (the model's tblproperties; a table made
  before that gets them on its next run with changes,
  zync_mirror_apply_properties): the MERGE's repairs of kept versions
  (valid_to, is_current) mark those rows in their files and write them
  anew, rather than rewriting every file holding a changed key, which with
  keys spread over the key space is every file of the history.
  A run whose table another run moved since it read its cursor writes
  nothing (zync_mirror_unmoved_cursor). A new value column is added to the
  table before the MERGE (zync_mirror_evolve_schema). The model's settings
  live in its meta (zync_history_settings).
#}
{% materialization zync_history, adapter='spark' %}
  {%- set settings = zync_history_settings() -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_relation(this) -%}
  {%- set rows = zync_mirror_rows_relation(this) -%}
  {%- set changes_relation = this.incorporate(path={"identifier": this.identifier ~ '__zync_changes'}).include(database=false, schema=false) -%}
  {%- set versions_relation = this.incorporate(path={"identifier": this.identifier ~ '__zync_versions'}).include(database=false, schema=false) -%}
  {%- set full = existing_relation is none or should_full_refresh() -%}
  {%- set after = zync_mirror_cursor(target_relation) if not full else none -%}

  {{ run_hooks(pre_hooks) }}

  {%- call statement('rows_view') -%}
    create or replace view {{ rows }} as
    {{ compiled_code }}
  {%- endcall -%}
  {%- set key = zync_mirror_key_names(zync_mirror_source(), settings.primary_key) -%}
  {%- set columns = zync_mirror_columns(rows, key, settings.get('columns') == 'after') -%}
  {%- set names = columns | map(attribute='name') | list -%}
  {%- set types = {} -%}
  {%- for column in columns -%}{%- do types.update({column.name: column.data_type}) -%}{%- endfor -%}

  {%- if full -%}
    {%- if existing_relation is not none and existing_relation.is_view -%}
      {%- do adapter.drop_relation(existing_relation) -%}
    {%- endif -%}
    {%- set cursor = zync_mirror_source_cursor(zync_mirror_source(), settings.topic) -%}
    {%- set events = '(\nselect `_zync_changes`.*, true as `_zync_new` from (\n' ~ zync_history_changes(rows, key, columns)
                     ~ '\n) as `_zync_changes`\n) as `_zync_events`' -%}
    {%- call zync_mirror_commit_carrying(target_relation, cursor) -%}
      {{ create_table_as(False, target_relation, zync_history_versions(events, key, names, settings.hard_deletes, types)) }}
    {%- endcall -%}
  {%- else -%}
    {%- call statement('create_changes') -%}
      {{ create_table_as(True, changes_relation, zync_history_changes(rows, key, columns, after=after)) }}
    {%- endcall -%}
    {%- call statement('cache_changes') -%}
      cache table {{ changes_relation }}
    {%- endcall -%}
    {%- set changes = run_query('select count(*) from ' ~ changes_relation).columns[0].values()[0] | int -%}
    {%- set read_from = zync_mirror_unmoved_cursor(target_relation, changes_relation) -%}
    {%- if changes > 0 -%}
      {%- do zync_mirror_apply_properties(target_relation, config.get('tblproperties') or {}) -%}
      {%- do zync_mirror_evolve_schema(target_relation, changes_relation) -%}
      {%- set key_filter = zync_mirror_key_filter(changes_relation, key)
                           if changes <= var('zync_mirror_key_filter_rows', 10000) else none -%}
      {%- set events = '(\n' ~ zync_history_events(target_relation, changes_relation, key, names, key_filter) ~ '\n) as `_zync_events`' -%}
      {%- call statement('create_versions') -%}
        {{ create_table_as(True, versions_relation, zync_history_versions(events, key, names, settings.hard_deletes, types)) }}
      {%- endcall -%}
      {%- call statement('cache_versions') -%}
        cache table {{ versions_relation }}
      {%- endcall -%}
      {%- set cursor = zync_mirror_next_cursor(read_from, changes_relation) -%}
      {%- set written = key + names + ['valid_from', 'valid_to', 'is_current', '_zync_op', '_zync_transaction',
                                       '_zync_source_ts', '_zync_position', '_zync_kafka', '_zync_delete'] -%}
      {%- call zync_mirror_commit_carrying(target_relation, cursor) -%}
        {{ zync_history_merge_sql(target_relation, versions_relation, key, written, key_filter=key_filter) }}
      {%- endcall -%}
      {%- call statement('uncache_versions') -%}
        uncache table if exists {{ versions_relation }}
      {%- endcall -%}
    {%- else -%}
      {%- call statement('main') -%}
        select 0 as `changes`
      {%- endcall -%}
    {%- endif -%}
    {%- call statement('uncache_changes') -%}
      uncache table if exists {{ changes_relation }}
    {%- endcall -%}
  {%- endif -%}

  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
