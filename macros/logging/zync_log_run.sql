{#
  A post-hook for output models: logs what this run appended, e.g.
    zync new_invoices: 7 input records done (7 processed, 0 expired): InvoiceStatus 3 processed,
    Invoices 4 processed; 5 out rows written to NewInvoices (offsets 0-4); 2 cursor rows
  It counts the rows carrying this invocation's run_id, which Delta's file
  statistics let Spark find without reading older files. Returns no SQL.
#}
{% macro zync_log_run() %}
{#- Only output tables (not, say, a pending view beside them) have rows to count. -#}
{%- if execute and (config.get('meta') or {}).get('zync_output_topic') %}
    {%- set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | list %}
    {%- if 'run_id' not in columns %}
        {%- do log('zync ' ~ this.identifier ~ ': no run_id column, so the rows of this run cannot be counted', info=True) %}
    {%- else %}
        {%- set counts = run_query(zync_run_counts_sql(this)) %}
        {%- do log(zync_run_summary(this.identifier, counts), info=True) %}
    {%- endif %}
{%- endif %}
{% endmacro %}


{#
  The rows of this run by kind, status and topic, with the range of offsets.
#}
{% macro zync_run_counts_sql(relation) -%}
select
    kind,
    status,
    kafka.topic as topic,
    count(*) as row_count,
    min(kafka.offset) as first_offset,
    max(kafka.offset) as last_offset
from {{ relation }}
where run_id = {{ dbt.string_literal(invocation_id) }}
group by kind, status, kafka.topic
order by kind, status, kafka.topic
{%- endmacro %}


{#
  One log line from the rows of zync_run_counts_sql.
#}
{% macro zync_run_summary(model_name, counts) -%}
{%- set done = {'all': 0, 'processed': 0, 'expired': 0} %}
{%- set out = {'rows': 0, 'topic': none, 'first': none, 'last': none} %}
{%- set cursor_rows = {'rows': 0} %}
{%- set per_topic = [] %}
{%- for row in counts.rows %}
    {%- if row['kind'] == 'done' %}
        {%- do done.update({'all': done['all'] + row['row_count']}) %}
        {%- do done.update({row['status']: done.get(row['status'], 0) + row['row_count']}) %}
        {%- do per_topic.append(row['topic'] ~ ' ' ~ row['row_count'] ~ ' ' ~ row['status']) %}
    {%- elif row['kind'] == 'out' %}
        {%- do out.update({'rows': row['row_count'], 'topic': row['topic'],
                           'first': row['first_offset'], 'last': row['last_offset']}) %}
    {%- elif row['kind'] == 'cursor' %}
        {%- do cursor_rows.update({'rows': cursor_rows['rows'] + row['row_count']}) %}
    {%- endif %}
{%- endfor %}
{%- set detail = (': ' ~ per_topic | join(', ')) if per_topic else '' %}
{%- set offsets = (' (offsets ' ~ out['first'] ~ '-' ~ out['last'] ~ ')') if out['rows'] else '' %}
{{- 'zync ' ~ model_name ~ ': ' ~ done['all'] ~ ' input records done (' ~ done['processed'] ~ ' processed, '
    ~ done['expired'] ~ ' expired' ~ ((', ' ~ done['skipped'] ~ ' skipped') if done.get('skipped') else '')
    ~ ((', ' ~ done['replayed'] ~ ' replayed') if done.get('replayed') else '') ~ ')' ~ detail ~ '; ' ~ out['rows'] ~ ' out rows written'
    ~ ((' to ' ~ out['topic']) if out['topic'] else '') ~ offsets ~ '; ' ~ cursor_rows['rows'] ~ ' cursor rows' -}}
{%- endmacro %}
