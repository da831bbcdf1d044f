{#
  The view of a mirror model's select (every raw change as the mirror's
  columns), `<mirror>__raw_changes` beside the mirror: the materialization
  replaces it on every run and reads its changes from it; the data tests
  rebuild the mirror from it.
#}
{% macro zync_mirror_rows_relation(mirror_relation) -%}
  {{ return(mirror_relation.incorporate(path={'identifier': mirror_relation.identifier ~ '__raw_changes'}, type='view')) }}
{%- endmacro %}
