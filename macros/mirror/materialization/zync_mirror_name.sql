{#
  A mirror's name, schema.model, as its commits' cursor metadata carries it:
  the same for the mirror's view and its base table (zync_mirror_base_relation),
  so the history of a mirror stored as a table before it had a base still
  vouches for the cursor once that table is renamed to the base.
#}
{% macro zync_mirror_name(mirror_relation) -%}
  {%- set suffix = zync_mirror_base_suffix() -%}
  {%- set identifier = mirror_relation.identifier -%}
  {%- if identifier.endswith(suffix) -%}
    {%- set identifier = identifier[:identifier | length - suffix | length] -%}
  {%- endif -%}
  {{ return(mirror_relation.schema ~ '.' ~ identifier) }}
{%- endmacro %}
