"""Helpers for the ingest tests: produce Avro with given schemas, run from-kafka, read the table.

Topics and tables are named ingest_* so that these tests share a pytest session with everyone else's.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from ingest.from_kafka import Ingest, ingest_progress
from zync import kafka_client
from zync.wire import Registry, encode

ROOT = Path(__file__).resolve().parents[2]
_counter = itertools.count()


def unique(prefix: str) -> str:
    """A topic name unique to this run (re-runs on the same broker never collide)."""
    return f"ingest_{prefix}_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:6]}"


class Producer:
    """Produces Confluent-wire-format Avro with explicit schemas, registered under T-key / T-value."""

    def __init__(self, target):
        self.target = target
        self.registry = Registry(target.schema_registry)
        self.producer = kafka_client.producer(target, **{"linger.ms": 5})

    def topic(self, name: str, partitions: int = 1) -> str:
        kafka_client.ensure_topic(self.target, name, num_partitions=partitions)
        return name

    def send(self, topic: str, key_schema: Any, value_schema: Any, records: list[tuple[Any, Any]],
             partition: int | None = None) -> None:
        key_writer = self.registry.register(f"{topic}-key", key_schema)
        value_writer = self.registry.register(f"{topic}-value", value_schema)
        for key, value in records:
            self.raw(topic, encode(key_writer, key),
                     None if value is None else encode(value_writer, value), partition)
        self.flush()

    def raw(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None) -> None:
        extra = {} if partition is None else {"partition": partition}
        self.producer.produce(topic, key=key, value=value, **extra)

    def flush(self) -> None:
        assert self.producer.flush(30) == 0, "messages not delivered"



def watermarks(target, topics: list[str]) -> kafka_client.Watermarks:
    """Each partition's low and high marks of `topics` now, as `zync run`'s cycle takes them for a pool."""
    watcher, admin = kafka_client.consumer(target, group="test-ingest-watch"), kafka_client.admin(target)
    try:
        return kafka_client.watermarks(watcher, admin, set(topics))
    finally:
        watcher.close()

@pytest.fixture(scope="session")
def producer(target):
    return Producer(target)


@pytest.fixture
def ingest(target, spark):
    """Run from-kafka in this process over what the topic holds when it starts (exit_after 0, as a `zync run`
    cycle: the tests produce first), or until idle for `exit_after` seconds; returns the records committed."""

    def run(topic: str, exit_after: float = 0.0, **options) -> int:
        job = Ingest(target, [topic], progress=ingest_progress(live=False, stream=sys.stderr), **options)
        total = job.run(exit_after=exit_after)
        if job.reader == "spark" and total:
            # Spark's reader is the default: a run that only ever fell back to the consumer is a bug.
            assert job.batches_read["spark"] > 0, f"Spark read none of the batches: {job.batches_read}"
        return total

    return run


def table_rows(spark, name: str) -> list:
    return spark.sql(f"select * from {name} order by kafka.partition, kafka.offset").collect()


class ZyncProcess:
    """`zync ...` in its own process, with its own state folder (for its log) but this session's Kafka,
    registry and catalog; its stderr goes to a file the test can read while it runs."""

    def __init__(self, args: list[str], state_dir: Path):
        state_dir.mkdir(parents=True, exist_ok=True)
        self.log = state_dir / "stderr.log"
        env = {**os.environ, "ZYNC_STATE_DIR": str(state_dir)}
        with open(self.log, "w") as err:
            self.process = subprocess.Popen([str(ROOT / ".venv" / "bin" / "zync"), *args], env=env, cwd=ROOT,
                                            stdout=subprocess.DEVNULL, stderr=err)

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def stderr(self) -> str:
        return self.log.read_text()

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
