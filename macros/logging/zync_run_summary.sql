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
