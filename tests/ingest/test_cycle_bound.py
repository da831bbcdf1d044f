"""A `zync run` cycle's ingest (exit_after 0) reads what its topic held when it started and returns,
also while a producer keeps writing: what arrives meanwhile is the next cycle's. Under a steady
stream there is always a new message, so a reader waiting for a quiet look kept the cycle's other
stages (dbt, egress) waiting for as long as the stream lasted."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from ingest.from_kafka import Ingest, ingest_progress
from tests.ingest.conftest import unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event

BACKLOG = 200
STREAM_S = 60.0  # far longer than a cycle's ingest of the backlog takes


def _rows(start: int, n: int) -> list[tuple[dict, dict]]:
    return [({"id": i}, event("c", {"id": i, "name": f"item {i}", "qty": i})) for i in range(start, start + n)]


@pytest.mark.parametrize("reader", ["spark", "python"])
def test_a_cycles_ingest_returns_under_a_steady_stream(producer, target, reader):
    topic = producer.topic(unique(f"steady_{reader}"))
    producer.send(topic, KEY, envelope(ROW_V1), _rows(0, BACKLOG))
    stop = threading.Event()

    def stream() -> None:  # a few messages a second, each flushed, for STREAM_S at most
        sent, end = BACKLOG, time.monotonic() + STREAM_S
        while not stop.is_set() and time.monotonic() < end:
            producer.send(topic, KEY, envelope(ROW_V1), _rows(sent, 2))
            sent += 2
            time.sleep(0.05)

    streaming = threading.Thread(target=stream, daemon=True)
    streaming.start()
    try:
        time.sleep(1.0)  # the stream is flowing before the cycle starts
        job = Ingest(target, [topic], reader=reader, progress=ingest_progress(live=False, stream=sys.stderr))
        started = time.monotonic()
        first = job.run(exit_after=0.0)
        took = time.monotonic() - started
        assert took < STREAM_S / 2, f"the cycle's ingest took {took:.0f} s: it followed the stream"
        assert first >= BACKLOG  # at least what the topic held at the start
        second = job.run(exit_after=0.0)  # the next cycle takes what came since, and returns too
        assert second > 0 and time.monotonic() - started < STREAM_S  # the stream was still on
    finally:
        stop.set()
        streaming.join()


def test_a_kept_ingest_reads_small_backlogs_with_its_warm_consumer_exactly_once(producer, target, spark):
    """zync run's cycles: a backlog of a few records, a new table's first ones included, is read by the
    consumer the Ingest keeps open from cycle to cycle (a Spark job costs ~0.7 s however few it reads),
    while a producer keeps writing, and every record lands once, in offset order."""
    from zync import kafka_client
    from zync.tables import raw_table_name

    topic = producer.topic(unique("warm"))
    producer.send(topic, KEY, envelope(ROW_V1), _rows(0, BACKLOG))
    watcher, admin = kafka_client.consumer(target, group="zync-test-warm"), kafka_client.admin(target)
    job = Ingest(target, [topic], progress=ingest_progress(live=False, stream=sys.stderr))
    stop = threading.Event()
    sent = [BACKLOG]

    def stream() -> None:
        while not stop.is_set():
            producer.send(topic, KEY, envelope(ROW_V1), _rows(sent[0], 3))
            sent[0] += 3
            time.sleep(0.1)

    streaming = threading.Thread(target=stream, daemon=True)
    try:
        marks = kafka_client.watermarks(watcher, admin, {topic})
        assert job.run(exit_after=0.0, marks=marks) == BACKLOG  # the table's first records
        assert job.committer.python_commits == 1, job.states[topic].table.declined  # created, written in Python
        streaming.start()
        taken = BACKLOG
        for _ in range(6):
            time.sleep(0.3)
            marks = kafka_client.watermarks(watcher, admin, {topic})
            read = job.run(exit_after=0.0, marks=marks)
            assert read > 0
            taken += read
        stop.set()
        streaming.join()
        marks = kafka_client.watermarks(watcher, admin, {topic})
        taken += job.run(exit_after=0.0, marks=marks)
        assert job.batches_read["spark"] == 0, "the small backlogs went to Spark"
    finally:
        stop.set()
        job.close()
        watcher.close()
    assert taken == sent[0]
    rows = spark.sql(f"select kafka.offset, key.id from zync.{raw_table_name(topic)} order by kafka.offset").collect()
    assert [r.offset for r in rows] == list(range(sent[0]))  # each offset once
    assert [r.id for r in rows] == list(range(sent[0]))


def test_a_first_run_counts_its_backlog_from_the_tables_offsets(producer, target, spark, monkeypatch):
    """A backlog above the bound goes to Spark's reader; a restarted `zync run`'s new Ingest counts what
    waits from where its table stands, not from the topic's start, and reads a small rest with its
    consumer."""
    from ingest import from_kafka
    from zync import kafka_client
    from zync.tables import raw_table_name

    monkeypatch.setattr(from_kafka, "SMALL_BACKLOG", BACKLOG - 1)
    topic = producer.topic(unique("restart_backlog"))
    producer.send(topic, KEY, envelope(ROW_V1), _rows(0, BACKLOG))
    watcher, admin = kafka_client.consumer(target, group="zync-test-restart-backlog"), kafka_client.admin(target)
    try:
        first = Ingest(target, [topic], progress=ingest_progress(live=False, stream=sys.stderr))
        assert first.run(exit_after=0.0, marks=kafka_client.watermarks(watcher, admin, {topic})) == BACKLOG
        assert first.batches_read == {"spark": 1, "consumer": 0}
        first.close()
        producer.send(topic, KEY, envelope(ROW_V1), _rows(BACKLOG, 5))
        restarted = Ingest(target, [topic], progress=ingest_progress(live=False, stream=sys.stderr))
        assert restarted.run(exit_after=0.0, marks=kafka_client.watermarks(watcher, admin, {topic})) == 5
        assert restarted.batches_read["spark"] == 0, "five records after a restart went to Spark"
        assert restarted.committer.python_commits == 1
        restarted.close()
    finally:
        watcher.close()
    rows = spark.sql(f"select kafka.offset from zync.{raw_table_name(topic)} order by kafka.offset").collect()
    assert [r.offset for r in rows] == list(range(BACKLOG + 5))
