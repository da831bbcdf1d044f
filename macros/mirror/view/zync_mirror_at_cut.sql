{#
  A mirror's rows as they stood at one of its connector's past transaction
  cuts (`consistency: transaction`): the select of the last change per key
  of the mirror's raw changes up to that cut, by the rules its view applies
  (zync_mirror_changes, zync_mirror_compact_sql), so the rows a rebuild at
  that cut would hold.

  - `mirror`: the mirror model's name, e.g. 'pg_orders'.
  - `at`: a timestamp (SQL, e.g. "timestamp'2026-03-01 00:00:00'"): the
    newest cut whose source commit time (`committed_at`) is at or before it;
  - or `cut`: a cut's `position` in the pool's view `<pool>__cuts` (the
    cuts' history, one row per move of the cut).

  Called with the same `at` (or `cut`) for every mirror of a connector, it
  gives them all at the same whole source transaction:

      with orders as ({{ zync_mirror_at_cut('pg_orders', at="timestamp'2026-03-01'") }}),
           lines as ({{ zync_mirror_at_cut('pg_lines', at="timestamp'2026-03-01'") }})
      select ...

  The cut is chosen when the model is compiled, and its offsets are written
  into the select as literals (so Delta skips the raw files past them). It
  scans the mirror's raw history up to the cut: a question about the past,
  not a mirror's everyday read.
#}
{% macro zync_mirror_at_cut(mirror, at=none, cut=none) -%}
  {%- set mirror_relation = ref(mirror) -%}
  {%- if not execute -%}
    {{ return('select 1') }}
  {%- endif -%}
  {%- if (at is none) == (cut is none) -%}
    {%- do exceptions.raise_compiler_error("zync_mirror_at_cut('" ~ mirror ~ "'): give at= (a timestamp) or cut= (a position in the pool's __cuts view), one of them") -%}
  {%- endif -%}
  {%- set nodes = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model') | selectattr('name', 'equalto', mirror) | list -%}
  {%- set settings = ((nodes[0].config.meta or {}).get('zync_mirror') if nodes else none) -%}
  {%- if settings is none -%}
    {%- do exceptions.raise_compiler_error("zync_mirror_at_cut: " ~ mirror ~ " is not a mirror model (none of the project's models named so has meta.zync_mirror)") -%}
  {%- endif -%}
  {%- set raw = nodes[0].sources[0] -%}
  {%- set found = graph.sources.values() | selectattr('source_name', 'equalto', raw[0]) | selectattr('name', 'equalto', raw[1]) | list -%}
  {%- set meta = found[0].meta if found else {} -%}
  {%- if not meta.get('zync_transactions') -%}
    {%- do exceptions.raise_compiler_error("zync_mirror_at_cut: mirror " ~ mirror ~ " does not keep its connector's transaction cut: give its mirror entry `consistency: transaction` (and a pool), compile, and run it") -%}
  {%- endif -%}
  {%- set source_relation = api.Relation.create(schema=found[0].schema, identifier=found[0].identifier) -%}
  {%- set cuts = api.Relation.create(schema=found[0].schema, identifier=meta.zync_pool ~ '__cuts') -%}
  {%- set chosen -%}
    select `position`, `partition`, `offset`
    from (
        select `position`, `offsets`[{{ dbt.string_literal(settings.topic) }}] as `topic_offsets`
        from {{ cuts }}
        where `connector` = {{ dbt.string_literal(meta.zync_transactions) }}
          and {{ ('`position` = ' ~ (cut | int)) if cut is not none else ('`committed_at` <= ' ~ at) }}
        order by `position` desc
        limit 1
    ) lateral view outer explode(`topic_offsets`) `cut_offsets` as `partition`, `offset`
  {%- endset -%}
  {%- set found_rows = run_query(chosen).rows -%}
  {%- if not found_rows -%}
    {%- do exceptions.raise_compiler_error("zync_mirror_at_cut: connector " ~ meta.zync_transactions ~ " has no cut " ~ (("at position " ~ cut) if cut is not none else ("committed at or before " ~ at)) ~ " in " ~ cuts) -%}
  {%- endif -%}
  {%- set offsets = {} -%}
  {%- for row in found_rows if row[1] is not none -%}
    {%- do offsets.update({row[1] | string: row[2] | int}) -%}
  {%- endfor -%}
  {%- set rows = zync_mirror_rows_relation(mirror_relation) -%}
  {%- set key = zync_mirror_key_names(source_relation, settings.primary_key) -%}
  {%- set columns = zync_mirror_columns(rows, key, settings.get('columns') == 'after') -%}
  {%- set upto = '(select * from ' ~ rows ~ ' where ' ~ zync_mirror_upto_filter(offsets) ~ ') as `_zync_rows`' -%}
  {{ return('-- ' ~ mirror ~ ' at cut ' ~ found_rows[0][0] ~ ' of ' ~ meta.zync_transactions ~ '\n'
            ~ zync_mirror_compact_sql(zync_mirror_changes(upto, key, columns, settings.delete))) }}
{%- endmacro %}
