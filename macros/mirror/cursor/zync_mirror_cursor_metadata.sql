{#
  The commit userMetadata that carries a cursor, e.g.
  {"zync_mirror": "zync.orders_mirror", "cursor": {"0": 1099999}}. The mirror's
  name is in it because the setting is session-wide: a commit to another table
  that ran alongside may carry it, and is then not taken for this mirror's.
#}
{% macro zync_mirror_cursor_metadata(mirror_relation, offsets) -%}
  {{ return(tojson({'zync_mirror': zync_mirror_name(mirror_relation), 'cursor': offsets})) }}
{%- endmacro %}
