{#
  Data test: the mirror's primary key is unique and never null.
  Fails with one row per duplicated or null key.
#}
{% test zync_mirror_primary_key(model, source_relation, primary_key=none) %}
{%- set names = zync_mirror_key_names(source_relation, primary_key) -%}
{%- set quoted = [] -%}
{%- for name in names -%}{%- do quoted.append(adapter.quote(name)) -%}{%- endfor -%}
select {{ quoted | join(', ') }}, count(*) as rows_with_this_key
from {{ model }}
group by {{ quoted | join(', ') }}
having count(*) > 1 or {% for q in quoted %}{{ q }} is null{{ " or " if not loop.last }}{% endfor %}
{% endtest %}
