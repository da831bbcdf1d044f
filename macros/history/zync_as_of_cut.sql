{#
  Several mirrors of one connector as they were at one source time, from
  their history models, at the same whole source transaction: no reader of
  them sees half of a transaction that touched several of the tables.

      {%- set at = zync_as_of_cut([ref('pg_orders'), ref('pg_lines')], '2026-03-01 12:00:00') %}
      select o.id, o.total, sum(l.qty) as qty
      from {{ at['pg_orders'] }} as o
      left join {{ at['pg_lines'] }} as l on l.order_id = o.id
      group by o.id, o.total

  `mirrors`: a list of mirror models (`ref(...)` or their names), each of
  them `history: true` and `consistency: transaction` on the same connector;
  or a connector's transaction topic (e.g. 'pg.transaction'): every mirror
  of it that keeps a history. `timestamp`: text Spark casts to a timestamp
  (in the session's time zone), as for zync_as_of.

  Returns a dict: mirror name -> a parenthesised query of its rows then,
  with the columns zync_as_of gives (the key's and the row's, valid_from,
  valid_to, `_zync_op`, `_zync_transaction`). One call chooses one point
  for all of them; calling zync_as_of for each table would choose by each
  table's own clock and history runs.

  The point: the connector's transactions in commit order (its transaction
  topic's ENDs, in offset order), the longest prefix of them
  - whose commit times (the END's ts_ms) are all at or before `timestamp`,
  - that lies within a cut of the connector (every transaction in it whole
    in the raw pool) which every listed history model holds entirely (its
    cursor is past every change of its topic up to that cut);
  so a timestamp later than what the history models hold gives the newest
  cut they all hold, not a newer state of some of them. A key's row is its
  last version (by source position, then Kafka position:
  zync_history_order) made by a transaction of that prefix, unless that
  version is a delete (new_record) or a delete of the prefix ended it
  (invalidate). Versions with no transaction (the initial snapshot's reads)
  come before every transaction: they are all in once a transaction is, and
  before the first one only if the timestamp is past every one of them (the
  snapshot is one state, not shown half read).

  Why transactions, not clocks or LSNs: a change's LSN is where it was
  written, and concurrent transactions interleave their writes, so an LSN
  bound can split one; commit order is the transaction topic's order. The
  point is chosen when the model is compiled (it costs a few small
  queries), its END offset written into each query as a literal.
#}
{% macro zync_as_of_cut(mirrors, timestamp) -%}
  {{ return(adapter.dispatch('zync_as_of_cut', 'zync')(mirrors, timestamp)) }}
{%- endmacro %}


{% macro default__zync_as_of_cut(mirrors, timestamp) -%}
  {%- set models = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model') | list -%}
  {%- set names = [] -%}
  {%- if mirrors is string -%}
    {%- for node in models if (node.config.meta or {}).get('zync_history') -%}
      {%- set raw = node.sources[0] if node.sources else none -%}
      {%- set found = graph.sources.values() | selectattr('source_name', 'equalto', raw[0]) | selectattr('name', 'equalto', raw[1]) | list if raw else [] -%}
      {%- if found and found[0].meta.get('zync_transactions') == mirrors -%}
        {%- do names.append(node.config.meta.zync_history.mirror) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- else -%}
    {%- for mirror in mirrors -%}
      {%- do names.append(mirror if mirror is string else mirror.identifier) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- if not execute -%}
    {%- set placeholders = {} -%}
    {%- for name in names -%}{%- do placeholders.update({name: '(select 1)'}) -%}{%- endfor -%}
    {{ return(placeholders) }}
  {%- endif -%}
  {%- if not names -%}
    {%- do exceptions.raise_compiler_error("zync_as_of_cut: no mirror to read (" ~ mirrors ~ "): list mirrors with `history: true`, or name a connector's transaction topic some of them keep") -%}
  {%- endif -%}
  {%- set at = 'cast(' ~ dbt.string_literal(timestamp) ~ ' as timestamp)' -%}

  {#- Each mirror's history model, raw source and connector. -#}
  {%- set tables = [] -%}
  {%- for name in names | unique -%}
    {%- set history_nodes = models | selectattr('name', 'equalto', name ~ '_history') | list -%}
    {%- set settings = (history_nodes[0].config.meta or {}).get('zync_history') if history_nodes else none -%}
    {%- if settings is none -%}
      {%- do exceptions.raise_compiler_error("zync_as_of_cut: " ~ name ~ " keeps no history (no model " ~ name ~ "_history with meta.zync_history): give its mirror entry `history: true` and compile") -%}
    {%- endif -%}
    {%- set raw = history_nodes[0].sources[0] -%}
    {%- set found = graph.sources.values() | selectattr('source_name', 'equalto', raw[0]) | selectattr('name', 'equalto', raw[1]) | list -%}
    {%- set meta = found[0].meta if found else {} -%}
    {%- if not meta.get('zync_transactions') -%}
      {%- do exceptions.raise_compiler_error("zync_as_of_cut: " ~ name ~ " does not keep its connector's transaction cut: give its mirror entry `consistency: transaction` (and a pool), compile, and run it") -%}
    {%- endif -%}
    {%- set history = api.Relation.create(schema=history_nodes[0].schema, identifier=history_nodes[0].alias or history_nodes[0].name, type='table') -%}
    {%- do tables.append({'name': name, 'history': history, 'settings': settings, 'meta': meta,
                          'source': api.Relation.create(schema=found[0].schema, identifier=found[0].identifier)}) -%}
  {%- endfor -%}
  {%- set connector = tables[0].meta.zync_transactions -%}
  {%- set pool = tables[0].meta.zync_pool -%}
  {%- for table in tables if table.meta.zync_transactions != connector or table.meta.zync_pool != pool -%}
    {%- do exceptions.raise_compiler_error("zync_as_of_cut: " ~ table.name ~ " is of connector " ~ table.meta.zync_transactions ~ " (pool " ~ table.meta.zync_pool ~ "), " ~ tables[0].name ~ " of " ~ connector ~ " (pool " ~ pool ~ "): one call reads one connector's mirrors") -%}
  {%- endfor -%}
  {%- set schema = tables[0].source.schema -%}
  {%- set cuts = api.Relation.create(schema=schema, identifier=pool ~ '__cuts') -%}
  {%- set transaction_source = [] -%}
  {%- for source in graph.sources.values() if (source.meta or {}).get('zync_topic') == connector and (source.meta or {}).get('zync_transactions_of') -%}
    {%- do transaction_source.append(api.Relation.create(schema=source.schema, identifier=source.identifier)) -%}
  {%- endfor -%}
  {%- if not transaction_source -%}
    {%- do exceptions.raise_compiler_error("zync_as_of_cut: no raw source of the transaction topic " ~ connector ~ " (meta.zync_transactions_of): compile the mirrors' entries") -%}
  {%- endif -%}

  {#- What each history model holds: per partition of its topic, the first raw change it has not taken
      (every change before it is in the history; a cut at or past it is not held). -#}
  {%- set held = [] -%}
  {%- for table in tables -%}
    {%- set cursor = zync_mirror_current_cursor(table.history) -%}
    {%- set past = zync_mirror_cursor_filter(cursor) -%}
    {%- set rows = zync_mirror_rows_relation(table.history) -%}
    {%- for row in run_query('select `_zync_kafka`.`partition`, min(`_zync_kafka`.`offset`) from ' ~ rows
                              ~ (' where ' ~ past if past else '') ~ ' group by 1').rows -%}
      {%- do held.append('coalesce(`offsets`[' ~ dbt.string_literal(table.settings.topic) ~ '][' ~ (row[0] | int) ~ '], -1) < ' ~ (row[1] | int)) -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- set newest_held -%}
    select max(`end_offset`), count(*)
    from {{ cuts }}
    where `connector` = {{ dbt.string_literal(connector) }}
    {%- for term in held %}
      and {{ term }}
    {%- endfor %}
  {%- endset -%}
  {%- set found_cut = run_query(newest_held).rows[0] -%}
  {%- if (found_cut[1] | int) == 0 -%}
    {%- do exceptions.raise_compiler_error("zync_as_of_cut: " ~ (tables | map(attribute='name') | join(', ')) ~ ": no cut of " ~ connector ~ " that all their history models hold: run them (dbt run, or zync run)") -%}
  {%- endif -%}
  {%- set held_end = found_cut[0] | int if found_cut[0] is not none else -1 -%}

  {#- The prefix of transactions: up to the first END after the timestamp, within the held cut. -#}
  {%- set first_after -%}
    select min(`kafka`.`offset`)
    from {{ transaction_source[0] }}
    where `kafka`.`topic` = {{ dbt.string_literal(connector) }}
      and `value`.`status` = 'END'
      and `value`.`ts_ms` > unix_millis({{ at }})
      and `kafka`.`offset` <= {{ held_end }}
  {%- endset -%}
  {%- set after = run_query(first_after).rows[0][0] -%}
  {%- set end = (after | int) - 1 if after is not none else held_end -%}
  {%- set ends_count = run_query('select count(*) from ' ~ transaction_source[0] ~ ' where `kafka`.`topic` = ' ~ dbt.string_literal(connector)
                                 ~ " and `value`.`status` = 'END' and `kafka`.`offset` <= " ~ end).rows[0][0] | int -%}
  {#- The snapshot's reads: all in once a transaction is; before that, only when the timestamp is past all of them. -#}
  {%- set snapshot = {'in': ends_count > 0} -%}
  {%- if not snapshot.in -%}
    {%- set latest -%}
      select coalesce(max(`valid_from`) <= {{ at }}, false) from (
        {%- for table in tables %}
        select `valid_from` from {{ table.history }} where `_zync_transaction` is null
        {{- "\n        union all" if not loop.last }}
        {%- endfor %}
      )
    {%- endset -%}
    {%- do snapshot.update({'in': run_query(latest).rows[0][0]}) -%}
  {%- endif -%}

  {%- set ends -%}
(
    select distinct {{ zync_transaction_key('`value`.`id`') }} as `transaction`
    from {{ transaction_source[0] }}
    where `kafka`.`topic` = {{ dbt.string_literal(connector) }}
      and `value`.`status` = 'END'
      and `kafka`.`offset` <= {{ end }}
)
  {%- endset -%}
  {%- set queries = {} -%}
  {%- for table in tables -%}
    {%- set key = zync_mirror_key_names(table.source, table.settings.primary_key) -%}
    {%- set values = zync_history_value_columns(table.history) -%}
    {%- set partition_by -%}
{% for name in key %}{{ adapter.quote(name) }}{{ ", " if not loop.last }}{% endfor %}
    {%- endset -%}
    {%- set query -%}
(
    -- {{ table.name }} as of {{ timestamp }}: {{ connector }}'s transactions up to END offset {{ end }}
    with `_zync_ends` as {{ ends }},
    `_zync_made` as (
        select `_zync_history`.*, `_zync_deleted`.`transaction` is not null as `_zync_deleted_by_then`
        from {{ table.history }} as `_zync_history`
        left join `_zync_ends` as `_zync_by`
            on {{ zync_transaction_key('`_zync_history`.`_zync_transaction`') }} = `_zync_by`.`transaction`
        left join `_zync_ends` as `_zync_deleted`
            on {{ zync_transaction_key('`_zync_history`.`_zync_delete`.`transaction`') }} = `_zync_deleted`.`transaction`
        where `_zync_by`.`transaction` is not null
            {%- if snapshot.in %}
            or `_zync_history`.`_zync_transaction` is null
            {%- endif %}
    ),
    `_zync_last` as (
        select `_zync_made`.*, row_number() over (
            partition by {{ partition_by }}
            order by `_zync_position` desc nulls last, `_zync_kafka`.`partition` desc, `_zync_kafka`.`offset` desc
        ) as `_zync_newest`
        from `_zync_made`
    )
    select
        {{ zync_as_of_columns(values) }}
    from `_zync_last`
    where `_zync_newest` = 1
        and `_zync_op` != 'd'
        and not `_zync_deleted_by_then`
)
    {%- endset -%}
    {%- do queries.update({table.name: query}) -%}
  {%- endfor -%}
  {{ return(queries) }}
{%- endmacro %}
