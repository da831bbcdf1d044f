{#
  One mirror's rows as they were at a source time, read from its history
  model (`<mirror>_history`, a mirror entry with `history: true`), as a
  parenthesised query to select from:

      select * from {{ zync_as_of(ref('customers_mirror'), '2026-03-01 12:00:00') }} as customers

  `mirror_relation`: the mirror (its history model is found by name beside
  it); `timestamp`: the time, as text Spark casts to a timestamp (in the
  session's time zone). A key's row is the version valid then
  (valid_from <= timestamp < valid_to, or no valid_to), unless that version
  is a delete (hard_deletes: new_record); a key deleted by then has none.
  The columns: the key's and the row's, then valid_from, valid_to, the op
  and the transaction id of the version.

  One table at its own source time, from what its history model holds
  now: two tables read so can show half of a transaction that changed
  both (one history model run past it, the other not yet). For several
  mirrors of one connector at the same whole transaction, use
  zync_as_of_cut.
#}
{% macro zync_as_of(mirror_relation, timestamp) -%}
  {{ return(adapter.dispatch('zync_as_of', 'zync')(mirror_relation, timestamp)) }}
{%- endmacro %}


{% macro default__zync_as_of(mirror_relation, timestamp) -%}
  {%- set history = mirror_relation.incorporate(path={'identifier': mirror_relation.identifier ~ '_history'}, type='table') -%}
  {%- set names = zync_history_value_columns(history) if execute else [] -%}
  {%- set at = 'cast(' ~ dbt.string_literal(timestamp) ~ ' as timestamp)' -%}
(
    select
        {{ zync_as_of_columns(names) }}
    from {{ history }}
    where `valid_from` <= {{ at }}
        and (`valid_to` is null or `valid_to` > {{ at }})
        and `_zync_op` != 'd'
)
{%- endmacro %}
