"""Kafka -> zync from-kafka -> dbt run -> mirror, on the real broker, registry, Spark/Delta and dbt."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.from_kafka import Ingest
from tests.mirrors.conftest import drop_tables, mirror_project, rows
from zync import kafka_client, topics

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "demo" / "invoices" / "schemas"
TOPIC = "mir_Invoices"
RAW = "mir_raw_invoices"
MODEL = "mir_invoices"
MIRRORS = f"""\
mirrors:
  - model: {MODEL}
    topic: {TOPIC}
    table: {RAW}
    delete: hard
    primary-key: {{invoice_id: key.ID}}
    columns:
      customer: value.after.customer
      item: upper(value.after.item)
"""


def invoice(op: str, ident: int, customer: str | None = None, item: str | None = None, ts: int = 0) -> dict:
    after = None if op == "d" else {"ID": ident, "customer": customer, "item": item}
    before = {"ID": ident, "customer": None, "item": None} if op in ("u", "d") else None
    return {"key": {"ID": ident}, "value": {"before": before, "after": after, "op": op, "ts_ms": ts}}


def produce_and_ingest(target, records: list[dict]) -> None:
    topics.produce(target, TOPIC, records, SCHEMAS / "Invoices-key.avsc", SCHEMAS / "Invoices-value.avsc")
    # Each run reads what the topic holds when it starts and returns (exit_after 0, as a `zync run`
    # cycle): the records are there already, so an idle wait after them only cost time. Ingest resumes
    # from the table, so run it until all have landed.
    landed = 0
    for _ in range(5):
        landed += Ingest(target, [TOPIC], table=RAW).run(exit_after=0.0)
        if landed >= len(records):
            break
    assert landed == len(records)


@pytest.fixture(scope="module")
def project(target, spark, tmp_path_factory):
    assert not kafka_client.topic_exists(target, TOPIC), f"{TOPIC} exists before the test ran"
    drop_tables(spark, RAW, MODEL)
    yield mirror_project(tmp_path_factory.mktemp("mir_kafka") / "project", {"mirrors.yml": MIRRORS}, spark)
    drop_tables(spark, RAW, MODEL)


def test_debezium_events_from_kafka_become_the_current_state(target, spark, project):
    produce_and_ingest(target, [
        invoice("r", 100, "Alice", "taco", ts=1000),
        invoice("r", 101, "Bob", "burrito", ts=1000),
        invoice("r", 102, "Charlie", "enchilada", ts=1000),
    ])
    project.dbt("run", "--select", MODEL)
    assert rows(spark, f"select invoice_id, customer, item from zync.{MODEL} order by 1") == [
        (100, "Alice", "TACO"), (101, "Bob", "BURRITO"), (102, "Charlie", "ENCHILADA")]

    produce_and_ingest(target, [
        invoice("u", 100, "Alice", "tamale", ts=2000),
        invoice("d", 101, ts=2001),
        {"key": {"ID": 101}, "value": None},  # Debezium's tombstone after a delete
        invoice("c", 103, "Dan", "beans", ts=2002),
        invoice("u", 103, "Dan", "rice", ts=2003),
    ])
    project.dbt("run", "--select", MODEL)
    assert rows(spark, f"select invoice_id, customer, item, _zync_op from zync.{MODEL} order by 1") == [
        (100, "Alice", "TAMALE", "u"), (102, "Charlie", "ENCHILADA", "r"), (103, "Dan", "RICE", "u")]
    # The mirror's cursor is the raw table's last applied offset (the tombstone aside).
    assert rows(spark, f"select max(_zync_kafka.offset) from zync.{MODEL}") == [(7,)]
    project.dbt("test", "--select", MODEL)
