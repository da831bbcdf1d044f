{#
  The cursor this run read its changes from, checked against the mirror's
  cursor now. Another run (`zync run`, an analyst's `dbt run`) that committed
  in between may have applied newer changes to the same keys, and applying
  this run's older ones over them would go back in time for good (the
  cursor is past them); so the run stops, having written nothing. What is
  left is the moment between this check and the MERGE's read of the mirror;
  a commit after that read fails the MERGE (Delta's conflict check).
#}
{% macro zync_mirror_unmoved_cursor(mirror_relation, changes_relation) -%}
  {%- set current = zync_mirror_current_cursor(mirror_relation) -%}
  {%- set read_from = zync_take_note('mirror_cursor') -%}
  {%- if read_from is not none and read_from != current -%}
    {%- call statement('uncache_changes') -%}
      uncache table if exists {{ changes_relation }}
    {%- endcall -%}
    {{ exceptions.raise_compiler_error(
        'zync: another run of ' ~ zync_mirror_name(mirror_relation) ~ ' committed since this run read its changes'
        ~ ' (its cursor was ' ~ tojson(read_from) ~ ', is now ' ~ tojson(current) ~ ').'
        ~ ' This run wrote nothing; run it again.') }}
  {%- endif -%}
  {{ return(current) }}
{%- endmacro %}
