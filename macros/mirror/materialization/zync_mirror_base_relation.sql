{#
  The Delta table a mirror folds its changes into, `<mirror>__base`: what
  each `dbt run` of the mirror MERGEs into and what its commits' cursors and
  time travel (VERSION AS OF, TIMESTAMP AS OF) are read from. The mirror's own
  name is a view over it and the raw changes past its cursor
  (zync_mirror_view_sql).
#}
{% macro zync_mirror_base_relation(mirror_relation) -%}
  {{ return(mirror_relation.incorporate(path={'identifier': mirror_relation.identifier ~ zync_mirror_base_suffix()}, type='table')) }}
{%- endmacro %}
