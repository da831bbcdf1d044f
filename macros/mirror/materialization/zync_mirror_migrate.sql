{#
  A mirror stored as a Delta table under its own name (as mirrors were
  before they had a base) becomes its base: renamed to `base_relation`, its
  rows, history and the cursor its commits carry kept (zync_mirror_name
  names both alike), so the run goes on from that cursor and the mirror's
  name becomes the view. Both a table under the mirror's name and a base is
  an ambiguity only a person can settle: the run stops, writing nothing.
#}
{% macro zync_mirror_migrate(mirror_relation, base_relation) -%}
  {%- if not execute -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set existing = load_relation(mirror_relation) -%}
  {%- if existing is none or existing.is_view -%}
    {{ return(none) }}
  {%- endif -%}
  {%- if load_relation(base_relation) is not none -%}
    {%- do exceptions.raise_compiler_error(
      'zync: mirror ' ~ zync_mirror_name(mirror_relation) ~ ' has both a table under its own name and its base '
      ~ base_relation ~ '; drop the one that is not wanted (the base is what the mirror reads), then run it again') -%}
  {%- endif -%}
  {%- do adapter.rename_relation(existing, base_relation) -%}
{%- endmacro %}
