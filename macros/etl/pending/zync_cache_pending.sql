{#
  Caches one input's pending records for the output model being run, as a
  session view zync_cache__<model>__<topic>__<time>, after dropping the ones
  earlier runs of this model left (no hook drops them after the run: a
  post-hook is skipped when the model fails, and a dbt thread's hook may
  outlive its connection when two in-process runs end together). Spark swaps
  a cached result in only for a query over the same table versions, so a
  cache left behind is never read in place of newer data; it lives at most
  until the next run of the model or the end of the Spark session (`zync run`
  clears the cache after each dbt run). The time in the name keeps two runs
  of one model in one session (threads) apart. Only `dbt run`/`dbt build`
  cache: compiling, `dbt docs generate` and a pending view render the query
  without running it. Off with var `zync_cache_pending: false`.
  Each input's count of pending records is left for the write (note
  'pending_counts', {topic: count}): with none pending anywhere the model
  has no row to write, and zync_output_insert_sql writes nothing; and the
  cached view's name (note 'pending_views', {topic: view}), whose records
  its guard checks no other run has done since.
  With `transactions` (the records carry zync_transaction_end, zync_pending)
  the same query also finds the lowest END of their transactions (note
  'transaction_ends', {topic: offset or none}): zync_output_rows moves the
  output's cursor of the transaction topic to it, without a pass of its own.
#}
{% macro zync_cache_pending(topic, pending_sql, transactions=false) -%}
{%- if execute and flags.WHICH in ('run', 'build') and model.config.materialized in ('zync_output', 'incremental')
      and var('zync_cache_pending', true) -%}
    {%- set prefix = 'zync_cache__' ~ this.identifier ~ '__' ~ modules.re.sub('[^0-9A-Za-z_]', '_', topic) | lower ~ '__' -%}
    {%- for view in run_query("show views like '" ~ prefix ~ "*'") -%}
        {%- if view['isTemporary'] and view['viewName'].startswith(prefix) -%}
            {#- not `uncache table`: it analyzes the view again, which fails if its tables were dropped since -#}
            {%- do zync_execute('drop view if exists ' ~ view['viewName']) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set cached = prefix ~ modules.datetime.datetime.now().strftime('%H%M%S%f') -%}
    {%- do zync_execute('cache table ' ~ cached ~ ' as ' ~ pending_sql) -%}
    {%- set counts = zync_take_note('pending_counts', keep=true) or {} -%}
    {%- set found = run_query('select count(*)' ~ (', min(zync_transaction_end)' if transactions else '') ~ ' from ' ~ cached).rows[0] -%}
    {%- do counts.update({topic: found[0] | int}) -%}
    {%- do zync_leave_note('pending_counts', counts) -%}
    {%- if transactions -%}
        {%- set ends = zync_take_note('transaction_ends', keep=true) or {} -%}
        {%- do ends.update({topic: (found[1] | int) if found[1] is not none else none}) -%}
        {%- do zync_leave_note('transaction_ends', ends) -%}
    {%- endif -%}
    {%- set views = zync_take_note('pending_views', keep=true) or {} -%}
    {%- do views.update({topic: cached}) -%}
    {%- do zync_leave_note('pending_views', views) -%}
{%- endif -%}
{%- endmacro %}
