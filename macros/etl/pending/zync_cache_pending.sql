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
#}
{% macro zync_cache_pending(topic, pending_sql) -%}
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
    {%- do counts.update({topic: run_query('select count(*) from ' ~ cached).rows[0][0] | int}) -%}
    {%- do zync_leave_note('pending_counts', counts) -%}
    {%- set views = zync_take_note('pending_views', keep=true) or {} -%}
    {%- do views.update({topic: cached}) -%}
    {%- do zync_leave_note('pending_views', views) -%}
{%- endif -%}
{%- endmacro %}
