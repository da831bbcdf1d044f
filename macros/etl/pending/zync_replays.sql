{#
  Replays: Debezium delivers at least once, and a Connect task that dies
  before its offsets are committed sends its last changes again (the same
  bytes at new offsets). Such a record must not take part in an event
  again: a replayed create whose original was paired would wait forever for
  a partner, and hold back every later record of its key.

  Selects the raw rows of `relation` from `var('zync_replay_window', 10000)`
  offsets below the cursors on, with `zync_replay_of`: the offset of the
  latest earlier record of the same partition, at most that many offsets
  before it, whose key and value are equal, else null. Only values that
  carry Debezium's source position (a non-null `value.source`: the LSN, the
  transaction and ts_ms of the change) are compared, since two distinct
  changes then never have equal values and a replay always does; a stream
  without it (hand-made records) may repeat a record on purpose, and its
  records are never replays. Equality is on the JSON of the decoded key and
  value (map columns are not comparable in Spark), through its SHA-256
  digest; a record without a source position gets its own offset as the
  digest, so it matches nothing.
  The window bounds a run's cost: it reads at most that many offsets more
  than what is new or pending (literal bounds, so Delta skips the files
  below them). A replay arriving further behind its original is processed
  like any record. `zync_replay_window: 0` turns this off.
#}
{% macro zync_replays(relation, topic, state) -%}
{%- set window = var('zync_replay_window', 10000) | int -%}
{%- if window > 0 -%}
{%- set json = "to_json(named_struct('k', raw.key, 'v', raw.value))" -%}
select
    raw.*,
    max(raw.kafka.offset) over (
        partition by raw.kafka.partition,
            case when get_json_object({{ json }}, '$.v.source') is not null then sha2({{ json }}, 256)
                 else cast(raw.kafka.offset as string) end
        order by raw.kafka.offset
        range between {{ window }} preceding and 1 preceding
    ) as zync_replay_of
from {{ relation }} as raw
where {{ zync_from_cursor('raw', topic, state, back=window) }}
{%- else -%}
select raw.*, cast(null as bigint) as zync_replay_of
from {{ relation }} as raw
{%- endif -%}
{%- endmacro %}
