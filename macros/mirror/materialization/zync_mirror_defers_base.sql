{#
  Whether this run of a mirror makes only its view, over every raw change,
  and no base (zync_mirror view-only): its base does not exist, the run is
  not a --full-refresh, and the invocation's var `zync_mirror_defer_base`
  (a list of model names) names it.

  `zync run` sets it for the first build of a mirror over few raw rows (the
  mirrors of a whole database's bootstrap, a few thousand rows each): the
  view is all its name needs to show every change, and writing a base (a
  Spark job, a Delta commit and a catalog table per mirror) is most of such a
  build's cost. The base is made by the mirror's first fold, when its raw
  table has grown enough to be worth folding (service/folds.py). Until then
  a query of the mirror reads its raw table whole, as the view's changes part
  does past a base's cursor, and the mirror's history is its raw table's.
  A plain `dbt run` makes the base.
#}
{% macro zync_mirror_defers_base(existing_relation) -%}
  {{ return(existing_relation is none and not should_full_refresh() and model.name in var('zync_mirror_defer_base', [])) }}
{%- endmacro %}
