"""from-kafka on the real broker, registry and Delta: layout, partitions, resume, tombstones, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.ingest.conftest import table_rows, unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event
from zync.errors import ZyncError
from zync.tables import raw_table_name


def _row(i: int) -> dict:
    return {"id": i, "name": f"item {i}", "qty": i * 10}


def test_three_partitions_envelope_first_and_resume_without_duplicates(producer, ingest, spark):
    topic = producer.topic(unique("parts"), partitions=3)
    for p in range(3):
        producer.send(topic, KEY, envelope(ROW_V1),
                      [({"id": p * 100 + i}, event("c", _row(p * 100 + i))) for i in range(5)], partition=p)
    assert ingest(topic) == 15
    table = f"zync.{raw_table_name(topic)}"
    schema = spark.table(table).schema
    assert schema.names == ["kafka", "key", "value"]
    assert schema["kafka"].dataType.names == ["topic", "partition", "offset", "timestamp",
                                               "key_schema_id", "value_schema_id"]
    assert schema["value"].dataType.names == ["before", "after", "source", "op", "ts_ms"]
    properties = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
    # Not Debezium's `before` image; its source commit time, for zync run's freshness (service/freshness.py).
    assert properties["delta.dataSkippingStatsColumns"] == "kafka,key,value.source.ts_ms"
    # Appended to every few seconds by zync run: a checkpoint every 100th commit, not Delta's every 10th.
    assert properties["delta.checkpointInterval"] == "100"
    detail = spark.sql(f"describe detail {table}").first()
    log = json.loads(next(line for line in (Path(urlparse(detail["location"]).path) / "_delta_log"
                                            / f"{0:020d}.json").read_text().splitlines() if line.startswith('{"add"')))
    stats = json.loads(log["add"]["stats"])
    assert stats["minValues"]["value"]["source"]["ts_ms"] == stats["maxValues"]["value"]["source"]["ts_ms"] > 0
    # The first batch created the table: one commit, the batch's own, not an empty create before it.
    assert [r.operation for r in spark.sql(f"describe history {table}").collect()] == ["CREATE TABLE AS SELECT"]

    for p in range(3):  # more arrives; a second run takes only that
        producer.send(topic, KEY, envelope(ROW_V1), [({"id": p * 100 + 5}, event("u", _row(p * 100 + 5)))],
                      partition=p)
    assert ingest(topic) == 3
    rows = table_rows(spark, table)
    coordinates = [(r.kafka.partition, r.kafka.offset) for r in rows]
    assert coordinates == [(p, o) for p in range(3) for o in range(6)]
    assert {r.kafka.topic for r in rows} == {topic}
    assert all(r.kafka.timestamp is not None and r.kafka.value_schema_id is not None for r in rows)
    first = rows[0]
    assert first.key.id == 0
    assert first.value.op == "c" and first.value.before is None
    assert first.value.after.asDict() == {"id": 0, "name": "item 0", "qty": 0}
    assert first.value.source.connector == "mysql" and first.value.ts_ms == 1_700_000_000_123
    assert rows[-1].value.op == "u" and rows[-1].value.after.id == 205
    # One Delta commit per batch: the first run's batch (which created the table), then the second's.
    ops = [r.operation for r in spark.sql(f"describe history {table}").collect()]
    assert ops == ["WRITE", "CREATE TABLE AS SELECT"]


def test_tombstones_are_rows_with_null_value(producer, ingest, spark):
    topic = producer.topic(unique("tomb"))
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": 1}, event("c", _row(1))),
                                                 ({"id": 1}, event("d", None, before=_row(1))),
                                                 ({"id": 1}, None)])
    assert ingest(topic) == 3
    rows = table_rows(spark, f"zync.{raw_table_name(topic)}")
    assert [r.value.op if r.value else None for r in rows] == ["c", "d", None]
    tomb = rows[2]
    assert tomb.key.id == 1 and tomb.value is None
    assert tomb.kafka.value_schema_id is None and tomb.kafka.key_schema_id is not None


def test_refuses_a_table_without_the_envelope(producer, ingest, spark):
    topic = producer.topic(unique("noenv"))
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": 1}, event("c", _row(1)))])
    name = raw_table_name(topic)
    spark.sql("create database if not exists zync")
    spark.sql(f"create table zync.{name} (id bigint, payload string) using delta")
    with pytest.raises(ZyncError, match=r"not a zync raw table.*missing: topic, partition, offset"):
        ingest(topic)
    assert spark.table(f"zync.{name}").count() == 0


def test_several_topics_need_their_own_tables(target):
    from ingest.from_kafka import Ingest

    with pytest.raises(ZyncError, match="single topic"):
        Ingest(target, ["a", "b"], table="one_table")
