{#
  A predicate keeping the rows of `topic` at or past its cursors, over the
  `kafka` column of `alias`: literals only, so Delta's data skipping prunes
  every file whose kafka.offset range lies below the cursor. (Partitions
  without a cursor yet are spelled with `<>`, which data skipping evaluates;
  a disjunct it cannot evaluate would make it read every file.)
  `back` widens the range by that many offsets below each cursor (the
  look-back of zync_replays).
#}
{% macro zync_from_cursor(alias, topic, state, back=0) -%}
  {%- set cursors = state.cursors.get(topic, {}) -%}
  {{ alias }}.kafka.topic = {{ zync_string(topic) }}
  {%- if cursors %} and (
        {%- for partition, offset in cursors | dictsort %}
        ({{ alias }}.kafka.partition = {{ partition }} and {{ alias }}.kafka.offset >= {{ offset - back }}) or
        {%- endfor %}
        ({% for partition in cursors | sort %}{{ alias }}.kafka.partition <> {{ partition }}{{ " and " if not loop.last }}{% endfor %})
    )
  {%- endif -%}
{%- endmacro %}
