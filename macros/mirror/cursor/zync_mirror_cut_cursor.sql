{#
  The newest cut of the connector whose cut the mirror being run keeps
  (`consistency: transaction`), as a cursor of its topic: {partition
  (string): the partition's last offset at or before the cut}; {} when the
  cut has passed none of the topic's records yet. none for a mirror that
  keeps no cut.

  A fold takes its changes up to this cursor, read once before it, and
  moves its base's cursor to it (zync_mirror materialization): every base of
  the connector folded in one run then holds exactly one cut, whatever the
  cut did while the run went on, and a base whose topic had no record since
  its last fold still holds it. What `zync run` records as a settled cut
  (service/settled_cuts.py) is such a cut.
#}
{% macro zync_mirror_cut_cursor(topic) -%}
  {%- set raw = model.sources[0] if model.sources else none -%}
  {%- set found = graph.sources.values() | selectattr('source_name', 'equalto', raw[0]) | selectattr('name', 'equalto', raw[1]) | list if raw else [] -%}
  {%- set meta = (found[0].meta or {}) if found else {} -%}
  {%- if not execute or not meta.get('zync_transactions') or not meta.get('zync_pool') -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set cut = api.Relation.create(schema=found[0].schema, identifier=meta.zync_pool ~ '__cut') -%}
  {%- set offsets -%}
    select `partition`, `offset`
    from (
        select `offsets`[{{ dbt.string_literal(topic) }}] as `topic_offsets`
        from {{ cut }}
        where `connector` = {{ dbt.string_literal(meta.zync_transactions) }}
    ) lateral view explode(`topic_offsets`) `cut_offsets` as `partition`, `offset`
  {%- endset -%}
  {{ return(zync_mirror_offsets(offsets)) }}
{%- endmacro %}
