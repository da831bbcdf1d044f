{#
  A history model's versions from events (`events`: a relation or a
  parenthesised query with the key's columns (`key`), the value columns
  (`names`), `_zync_op`, `_zync_source_ts`, `_zync_position`,
  `_zync_transaction`, `_zync_kafka` and `_zync_new`, zync_history_events):
  - one event per Kafka position (a record ingested twice), and one per key,
    source position and op (a change Debezium sent again at a later offset,
    as after a connector restart); the event already kept wins, then the
    smallest Kafka position;
  - a key's events ordered by source position, then Kafka partition and
    offset (zync_history_order);
  - a version per c, r and u change, and per delete with `hard_deletes:
    new_record` (the row as deleted), valid from its source time (else its
    Kafka time) to the next event's of its key (an update, a delete, a
    re-creation), null while none followed; is_current on the last version
    of a key unless it is a delete;
  - `hard_deletes: invalidate` writes no row for a delete: it ends the
    version before it and is kept on it as `_zync_delete` (its position,
    Kafka position, time and transaction), so a later run that orders a late
    change before that delete still knows it.
  - a column holding Debezium's unavailable-value placeholder (an unchanged
    TOASTed value, zync_unavailable; `types`: {name: Spark type} of the
    value columns) takes the value of its key's version before it, as the
    mirror does; a version with no earlier value of it (its key's first
    event the history holds) has null there, as a rebuilt mirror.
  A delete with no version before it (invalidate) is not kept.
#}
{% macro zync_history_versions(events, key, names, hard_deletes, types=none) -%}
{%- set partition_by -%}
{% for name in key %}{{ adapter.quote(name) }}{{ ", " if not loop.last }}{% endfor %}
{%- endset -%}
{%- set unavailable = {} -%}
{%- for name in names if name in (types or {}) -%}
  {%- set test = zync_unavailable(adapter.quote(name), types[name]) -%}
  {%- if test is not none -%}{%- do unavailable.update({name: test}) -%}{%- endif -%}
{%- endfor -%}
with

events as (
    select * from {{ events }}
),

by_record as (
    select * from (
        select events.*, row_number() over (
            partition by `_zync_kafka`.`topic`, `_zync_kafka`.`partition`, `_zync_kafka`.`offset`
            order by `_zync_new`
        ) as `_zync_copy`
        from events
    )
    where `_zync_copy` = 1
),

by_position as (
    select * from (
        select by_record.*, row_number() over (
            partition by {{ partition_by }}, `_zync_position`, `_zync_op`
            order by `_zync_new`, `_zync_kafka`.`partition`, `_zync_kafka`.`offset`
        ) as `_zync_resent`
        from by_record
    )
    where `_zync_position` is null or `_zync_resent` = 1
),

carried as (
    select
        {%- for name in key + names %}
        {%- if name in unavailable %}
        last_value(case when not {{ unavailable[name] }} then named_struct('v', {{ adapter.quote(name) }}) end, true) over (
            partition by {{ partition_by }} order by {{ zync_history_order() }}
            rows between unbounded preceding and current row
        ).`v` as {{ adapter.quote(name) }},
        {%- else %}
        {{ adapter.quote(name) }},
        {%- endif %}
        {%- endfor %}
        `_zync_op`, `_zync_source_ts`, `_zync_position`, `_zync_transaction`, `_zync_kafka`
    from by_position
),

ordered as (
    select
        carried.*,
        coalesce(timestamp_millis(`_zync_source_ts`), `_zync_kafka`.`timestamp`) as `_zync_at`,
        lead(named_struct(
            'op', `_zync_op`,
            'at', coalesce(timestamp_millis(`_zync_source_ts`), `_zync_kafka`.`timestamp`),
            'position', `_zync_position`,
            'kafka', `_zync_kafka`,
            'source_ts', `_zync_source_ts`,
            'transaction', `_zync_transaction`
        )) over (partition by {{ partition_by }} order by {{ zync_history_order() }}) as `_zync_next`
    from carried
)

select
    {%- for name in key + names %}
    {{ adapter.quote(name) }},
    {%- endfor %}
    `_zync_at` as `valid_from`,
    `_zync_next`.`at` as `valid_to`,
    `_zync_next` is null and `_zync_op` != 'd' as `is_current`,
    `_zync_op`,
    `_zync_transaction`,
    `_zync_source_ts`,
    `_zync_position`,
    `_zync_kafka`,
    {%- if hard_deletes == 'invalidate' %}
    case when `_zync_next`.`op` = 'd' then named_struct(
        'position', `_zync_next`.`position`,
        'kafka', `_zync_next`.`kafka`,
        'source_ts', `_zync_next`.`source_ts`,
        'transaction', `_zync_next`.`transaction`
    ) end as `_zync_delete`
    {%- else %}
    cast(null as struct<position: bigint, kafka: struct<topic: string, partition: int, offset: bigint, timestamp: timestamp>, source_ts: bigint, transaction: string>) as `_zync_delete`
    {%- endif %}
from ordered
{%- if hard_deletes == 'invalidate' %}
where `_zync_op` != 'd'
{%- endif %}
{%- endmacro %}
