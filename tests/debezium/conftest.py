"""Real Debezium: PostgreSQL and a Kafka Connect worker, started ONCE for this package, beside the
session's broker and registry (tests/conftest.py).

The `debezium` fixture is the toolbox for tests on real connectors: psql, fresh databases,
source and sink connectors (start, stop, resume, restart, delete), waiting for N records on a
topic, ingesting a topic with `zync from-kafka` until it holds N records. Databases and topics are
named dbz_* so that these tests share a session with everyone else's.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from stack import connect, postgres, services
from zync import kafka_client
from zync.config import Target

CONNECT_SERVICES = {"postgres", "connect"}


class Debezium:
    def __init__(self, target: Target):
        self.target = target
        self.connect = connect.Connect()
        self.connectors: list[str] = []
        self.databases: list[str] = []

    # PostgreSQL
    def psql(self, sql: str, database: str) -> str:
        return postgres.psql(sql, database)

    def query(self, sql: str, database: str) -> list[dict[str, Any]]:
        return postgres.query(sql, database)

    def database(self, name: str) -> str:
        """A new empty database (dropped first if an earlier run left it)."""
        postgres.drop_database(name)
        postgres.ensure_database(name)
        self.databases.append(name)
        return name

    # Connectors
    def source(self, name: str, database: str, tables: list[str], topic_prefix: str, **overrides: str) -> dict:
        """Start a Debezium PostgreSQL source and wait until its task runs."""
        config = connect.postgres_source(self.target, name, database, tables, topic_prefix, **overrides)
        self.connectors.append(name)
        return self.connect.run(name, config)

    def sink(self, name: str, topics: list[str], database: str, **overrides: str) -> dict:
        """Start a Debezium JDBC sink and wait until its task runs."""
        config = connect.jdbc_sink(self.target, name, topics, database, **overrides)
        self.connectors.append(name)
        return self.connect.run(name, config)

    def stop(self, name: str) -> None:
        self.connect.stop(name)
        self.connect.wait(name, "STOPPED")

    def resume(self, name: str) -> None:
        self.connect.resume(name)
        self.connect.wait(name, "RUNNING")

    def restart(self, name: str) -> None:
        self.connect.restart(name)
        self.connect.wait(name, "RUNNING")

    def delete(self, name: str) -> None:
        self.connect.delete(name)
        if name in self.connectors:
            self.connectors.remove(name)

    # Kafka
    def count(self, topic: str) -> int:
        """Records in a topic (all partitions; nothing is deleted by retention in a test)."""
        if not kafka_client.topic_exists(self.target, topic):
            return 0
        return sum(kafka_client.high_water_marks(self.target, topic).values())

    def wait_records(self, topic: str, n: int, timeout_s: float = 90.0) -> int:
        """Wait until `topic` holds at least n records; fail with a clear message (and the connectors'
        states) if it does not within the timeout. Returns the count, which may exceed n."""
        deadline = time.monotonic() + timeout_s
        while True:
            count = self.count(topic)
            if count >= n or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if count < n:
            states = {c: self.connect.status(c) for c in self.connectors}
            raise AssertionError(f"{topic} holds {count} records, not {n}, after {timeout_s:.0f}s; "
                                 f"connectors: {states}")
        return count

    def replay(self, topic: str, first_offset: int) -> int:
        """Deliver the connector's own records of `topic` (partition 0) from first_offset on a second
        time, byte for byte and in order, after what the topic holds: what a Debezium task does after
        a crash before its offsets were committed. Returns how many records were sent again."""
        from confluent_kafka import TopicPartition

        consumer = kafka_client.consumer(self.target, "dbz-replay", **{"auto.offset.reset": "earliest",
                                                                        "enable.auto.commit": False})
        end = kafka_client.high_water_marks(self.target, topic)[0]
        consumer.assign([TopicPartition(topic, 0, first_offset)])
        producer = kafka_client.producer(self.target)
        replayed = 0
        while first_offset + replayed < end:
            message = consumer.poll(10)
            assert message is not None and message.error() is None, \
                f"record {first_offset + replayed} of {topic} not read back"
            producer.produce(topic, key=message.key(), value=message.value(), partition=0)
            replayed += 1
        consumer.close()
        assert producer.flush(30) == 0
        return replayed

    def ingest(self, topic: str, table: str, n: int, rounds: int = 5) -> int:
        """`zync from-kafka` in this process until the raw table has taken the topic's first n records.

        Each round reads what the topic holds when it starts and returns (exit_after 0, as a `zync run`
        cycle): the callers wait for the records first, so an idle wait after them only cost time."""
        from ingest.from_kafka import Ingest
        from ingest.from_kafka import ingest_progress

        landed = 0
        for round_no in range(rounds):
            if round_no:
                time.sleep(1.0)
            landed += Ingest(self.target, [topic], table=table,
                             progress=ingest_progress(live=False, stream=sys.stderr)).run(exit_after=0.0)
            if landed >= n:
                break
        return landed

    def cleanup(self) -> None:
        for name in list(self.connectors):
            self.delete(name)
        for name in self.databases:
            postgres.drop_database(name)


@pytest.fixture(scope="package")
def debezium(target):
    """PostgreSQL and Connect for this package; stopped after it, each when started here (the broker and
    registry stay; PostgreSQL too when the session's catalog service, tests/conftest.py, runs on it)."""
    started = time.monotonic()
    starting = {name for name in CONNECT_SERVICES if name != "postgres" or postgres.service().pid() is None}
    services.up(target, connect=True)
    print(f"\nPostgreSQL and Kafka Connect up in {time.monotonic() - started:.1f}s", file=sys.stderr)
    env = Debezium(target)
    yield env
    try:
        env.cleanup()
    finally:
        services.down(target, only=starting)
