{#
  Several mirrors of one connector (`consistency: transaction`) at the
  newest cut their bases all hold exactly, its settled cut: each mirror's
  base read `VERSION AS OF` the version `zync run` recorded for that cut in
  `<pool>__settled` (service/settled_cuts.py). No reader of them sees half
  of a source transaction, and each is a plain read of a Delta table: no
  scan of the raw pool, no merge of changes, where the mirrors' own views
  plan and run one per mirror (seconds a query over a few of them). As
  fresh as the last `zync run` cycle that folded them, where the views are
  as fresh as the last ingest.

      {%- set at = zync_settled_cut([ref('pg_orders'), ref('pg_lines')]) %}
      select o.id, o.total, sum(l.qty) as qty
      from {{ at['pg_orders'] }} as o
      left join {{ at['pg_lines'] }} as l on l.order_id = o.id
      group by o.id, o.total

  `mirrors`: a list of mirror models (`ref(...)` or their names) of one
  connector; or the connector's transaction topic (e.g. 'pg.transaction'):
  every mirror of it. Returns a dict: mirror name -> a parenthesised query
  of its rows at the cut, with the mirror's columns. The cut is chosen when
  the model is compiled: a model run again reads the newest.
#}
{% macro zync_settled_cut(mirrors) -%}
  {{ return(adapter.dispatch('zync_settled_cut', 'zync')(mirrors)) }}
{%- endmacro %}


{% macro default__zync_settled_cut(mirrors) -%}
  {%- set models = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model') | list -%}
  {%- set names = [] -%}
  {%- for mirror in (mirrors if mirrors is not string else []) -%}
    {%- do names.append(mirror if mirror is string else mirror.identifier) -%}
  {%- endfor -%}
  {%- set chosen = [] -%}
  {%- for node in models if (node.config.meta or {}).get('zync_mirror') -%}
    {%- set raw = node.sources[0] if node.sources else none -%}
    {%- set found = graph.sources.values() | selectattr('source_name', 'equalto', raw[0]) | selectattr('name', 'equalto', raw[1]) | list if raw else [] -%}
    {%- set meta = (found[0].meta or {}) if found else {} -%}
    {%- if (mirrors is string and meta.get('zync_transactions') == mirrors) or node.name in names -%}
      {%- do chosen.append({'node': node, 'meta': meta, 'schema': found[0].schema if found else none}) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if not execute -%}
    {%- set placeholders = {} -%}
    {%- for item in chosen -%}{%- do placeholders.update({item.node.name: '(select 1)'}) -%}{%- endfor -%}
    {{ return(placeholders) }}
  {%- endif -%}
  {%- if not chosen -%}
    {%- do exceptions.raise_compiler_error("zync_settled_cut: no mirror to read (" ~ mirrors ~ "): list mirror models, or name a connector's transaction topic whose mirrors keep its cut (`consistency: transaction`)") -%}
  {%- endif -%}
  {%- for item in chosen if not item.meta.get('zync_transactions') -%}
    {%- do exceptions.raise_compiler_error("zync_settled_cut: " ~ item.node.name ~ " does not keep its connector's transaction cut: give its mirror entry `consistency: transaction` (and a pool), compile, and run it") -%}
  {%- endfor -%}
  {%- set connector = chosen[0].meta.zync_transactions -%}
  {%- for item in chosen if item.meta.zync_transactions != connector or item.meta.zync_pool != chosen[0].meta.zync_pool -%}
    {%- do exceptions.raise_compiler_error("zync_settled_cut: " ~ item.node.name ~ " is of connector " ~ item.meta.zync_transactions ~ ", " ~ chosen[0].node.name ~ " of " ~ connector ~ ": one call reads one connector's mirrors") -%}
  {%- endfor -%}
  {%- set settled = api.Relation.create(schema=chosen[0].schema, identifier=chosen[0].meta.zync_pool ~ '__settled') -%}
  {%- set newest -%}
    select `end_offset`, `mirror`, `version`
    from (
        select `end_offset`, `versions`
        from {{ settled }}
        where `connector` = {{ dbt.string_literal(connector) }}
        order by `end_offset` desc
        limit 1
    ) lateral view explode(`versions`) `settled_versions` as `mirror`, `version`
  {%- endset -%}
  {%- set versions = {} -%}
  {%- set cut = {'end': none} -%}
  {%- for row in (run_query(newest).rows if load_relation(settled) is not none else []) -%}
    {%- do versions.update({row[1]: row[2] | int}) -%}
    {%- do cut.update({'end': row[0]}) -%}
  {%- endfor -%}
  {%- set queries = {} -%}
  {%- for item in chosen -%}
    {%- set mirror = api.Relation.create(schema=item.node.schema, identifier=item.node.alias or item.node.name) -%}
    {%- set name = zync_mirror_name(mirror) -%}
    {%- if name not in versions -%}
      {%- do exceptions.raise_compiler_error("zync_settled_cut: no cut of " ~ connector ~ " settled with " ~ name ~ " in " ~ settled ~ ": zync run records one once the connector's mirrors are folded to the same cut; run it") -%}
    {%- endif -%}
    {%- do queries.update({item.node.name: '(\n    -- ' ~ item.node.name ~ ' at the settled cut of ' ~ connector ~ ' (END offset ' ~ cut.end ~ ')\n    select * from '
                                            ~ zync_mirror_base_relation(mirror) ~ ' version as of ' ~ versions[name] ~ '\n)'}) -%}
  {%- endfor -%}
  {{ return(queries) }}
{%- endmacro %}

