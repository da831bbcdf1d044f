{#
  A post-hook for output models: logs what this run appended, e.g.
    zync new_invoices: 7 input records done (7 processed, 0 expired): InvoiceStatus 3 processed,
    Invoices 4 processed; 5 out rows written to NewInvoices (offsets 0-4); 2 cursor rows
  It counts the rows carrying this invocation's run_id, which Delta's file
  statistics let Spark find without reading older files. Returns no SQL.
  Off with var `zync_log_run: false`: `zync run` sets it, since its own log
  and metrics say what each run did, and the count is a query of every run.
#}
{% macro zync_log_run() %}
{#- Only output tables (not, say, a pending view beside them) have rows to count. -#}
{%- if execute and var('zync_log_run', true) and (config.get('meta') or {}).get('zync_output_topic') %}
    {%- set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | list %}
    {%- if 'run_id' not in columns %}
        {%- do log('zync ' ~ this.identifier ~ ': no run_id column, so the rows of this run cannot be counted', info=True) %}
    {%- else %}
        {%- set counts = run_query(zync_run_counts_sql(this)) %}
        {%- do log(zync_run_summary(this.identifier, counts), info=True) %}
    {%- endif %}
{%- endif %}
{% endmacro %}
