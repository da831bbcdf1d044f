"""Exactly once under kill -9 and under a second ingest of the same table, with real processes
(and, in-process, two first writers of a table that does not exist yet).

The subprocesses share this session's Kafka, registry and catalog; the table
is a Delta path (--location) read here by path.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest import data_file
from ingest.delta_append import (CONCURRENT_MODIFICATION, TableReplacedError, append_files_reading_whole_table,
                                 append_reading_whole_table)
from ingest.spark_errors import caused_by
from ingest.table import ConcurrentIngestError, RawTable
from zync import storage
from zync.envelope import raw_row_schema as row_schema
from tests.ingest.conftest import ZyncProcess, unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event


def _events(start: int, n: int):
    return [({"id": i}, event("c", {"id": i, "name": f"n{i}", "qty": i})) for i in range(start, start + n)]


def _offsets(spark, location: str) -> Counter:
    rows = spark.sql(f"select kafka.partition as p, kafka.offset as o from delta.`{location}`").collect()
    return Counter((r.p, r.o) for r in rows)


def _commits(location: str) -> int:
    return sum(1 for e in storage.location(location).child("_delta_log").entries() if e.name.endswith(".json"))


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_kill_9_mid_run_then_restart_loses_and_duplicates_nothing(producer, spark, tmp_path, table_home):
    topic = producer.topic(unique("kill"), partitions=2)
    # Eight batches: the kill comes after the second commit, with more to commit (a commit takes over a
    # second, this test looks every 0.2 s); the restart commits the rest.
    total = 1600
    for p in range(2):
        producer.send(topic, KEY, envelope(ROW_V1), _events(p * total, total // 2), partition=p)
    location = f"{table_home}/table"
    args = ["from-kafka", "--topic", topic, "--location", location, "--batch-size", "200", "--exit-after", "1s"]
    first = ZyncProcess(args, tmp_path / "state-1")
    try:
        # Killed once it has committed a few batches, while it is committing more.
        _wait_for(lambda: _commits(location) >= 2 or first.poll() is not None, 600, "the first commits")
        assert first.poll() is None, first.stderr()[-2000:]
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
    finally:
        first.stop()
    partial = _offsets(spark, location)
    assert 0 < sum(partial.values()) < total, "the kill came too late to test anything"
    assert max(partial.values()) == 1

    second = ZyncProcess(args, tmp_path / "state-2")
    try:
        assert second.wait(600) == 0, second.stderr()[-2000:]
    finally:
        second.stop()
    assert '"event": "start"' in second.stderr() and '"resume_offsets": {}' not in second.stderr()
    offsets = _offsets(spark, location)
    assert offsets == Counter({(p, o): 1 for p in range(2) for o in range(total // 2)})


def test_a_second_ingest_of_the_same_table_is_refused_not_duplicated(producer, spark, tmp_path, table_home):
    topic = producer.topic(unique("twice"))
    producer.send(topic, KEY, envelope(ROW_V1), _events(0, 10))
    location = f"{table_home}/table"
    # No --exit-after: each runs until it fails or is stopped here. The race is the first commit after
    # both caught up (the loser stops there): batches of 200 leave the winner few commits after it.
    args = ["from-kafka", "--topic", topic, "--location", location, "--batch-size", "200", "--max-interval", "200ms"]
    one = ZyncProcess(args, tmp_path / "state-1")
    two = None
    try:
        _wait_for(lambda: _commits(location) >= 1 or one.poll() is not None, 600, "the first ingest's commit")
        two = ZyncProcess(args, tmp_path / "state-2")
        _wait_for(lambda: two.poll() is not None or '"event": "start"' in two.stderr(), 600,
                  "the second ingest's start")
        time.sleep(2)  # both caught up: from here on both read every new message
        for start in range(10, 400, 30):
            producer.send(topic, KEY, envelope(ROW_V1), _events(start, 30))
        _wait_for(lambda: one.poll() is not None or two.poll() is not None, 600, "one ingest to stop")
        loser, winner = (one, two) if one.poll() is not None else (two, one)
        _wait_for(lambda: sum(_offsets(spark, location).values()) >= 400 or winner.poll() is not None, 600,
                  "the other ingest to commit everything")
        assert winner.poll() is None, winner.stderr()[-3000:]
    finally:
        for p in (one, two):
            if p is not None:
                p.stop()
    assert loser.poll() == 1, loser.stderr()[-3000:]
    assert "another ingest is writing table" in loser.stderr()
    assert _offsets(spark, location) == Counter({(0, o): 1 for o in range(400)})


def test_of_two_first_writers_of_a_new_table_the_second_is_refused(spark, table_home):
    """Both saw no table; one created it with its first batch: the other must not append its batch too."""
    location = f"{table_home}/table"
    key = T.StructType([T.StructField("id", T.LongType())])
    schema = row_schema(key, key)
    batch = spark.createDataFrame([(("t", 0, o, None, None, None), (o,), (o,)) for o in range(3)], schema)
    first, second = RawTable(spark, location=location), RawTable(spark, location=location)
    assert not first.exists() and not second.exists()
    first.append(batch, "batch 1")
    with pytest.raises(ConcurrentIngestError, match="another ingest is writing table"):
        second.append(batch, "batch 1")
    assert _offsets(spark, location) == Counter({(0, o): 1 for o in range(3)})


def test_of_two_ingests_creating_a_new_table_by_name_for_python_rows_the_second_is_refused(spark):
    """Both saw no table and create it empty for a first batch written in Python (RawTable.create):
    the second create must stop that ingest rather than append its batch to the first one's table."""
    name = f"zync.{unique('created_twice')}"
    key = T.StructType([T.StructField("id", T.LongType())])
    first, second = RawTable(spark, name=name), RawTable(spark, name=name)
    assert not first.exists() and not second.exists()
    try:
        assert first.create(key, key, "batch 1")
        with pytest.raises(ConcurrentIngestError, match="it created the table first"):
            second.create(key, key, "batch 1")
        assert spark.table(name).count() == 0
        assert spark.sql(f"describe history {name}").count() == 1
    finally:
        spark.sql(f"drop table if exists {name}")


def test_a_delta_table_no_ingest_created_in_a_new_tables_folder_is_left_alone(spark):
    """A Delta table in the catalog's folder for a new table, with no catalog entry and not an
    ingest's: neither taken as the table nor written over; the create declines, saying why."""
    from zync.delta_metadata import default_location

    name = f"zync.{unique('foreign')}"
    table = RawTable(spark, name=name)
    spark.range(3).write.format("delta").save(default_location(spark, name))
    key = T.StructType([T.StructField("id", T.LongType())])
    assert not table.exists()
    assert not table.create(key, key, "batch 1")
    assert "no ingest created" in table.declined
    batch = spark.createDataFrame([(("t", 0, 0, None, None, None), (0,), (0,))], row_schema(key, key))
    with pytest.raises(Exception) as refused:  # Spark's first append, where a declined batch goes
        table.append(batch, "batch 1")
    assert default_location(spark, name).removeprefix("file:") in str(refused.value)
    assert not spark.catalog.tableExists(name)
    assert spark.read.format("delta").load(default_location(spark, name)).count() == 3


@pytest.mark.parametrize("slow_writer", ["spark", "python"])
def test_of_two_appends_racing_for_one_table_delta_fails_the_later_commit(spark, table_home, slow_writer):
    """Both began on the same table version and passed every check before writing; the one that
    commits second must fail instead of adding its rows too (the race the before-and-after checks
    cannot close: only Delta's conflict check sees a commit land while the files are written).
    The slow one writes its files through a Spark job, or in Python (a small batch, ingest/data_file.py)."""
    location = f"{table_home}/table"
    spark.range(3).write.format("delta").save(location)

    @F.udf("long")
    def slowly(value):
        time.sleep(0.5)  # the slow writer is still writing its files when the quick one commits
        return value

    def slow_files(metadata) -> list[dict]:
        add = data_file.write(pa.table({"id": pa.array([10, 11], pa.int64())}), storage.location(location),
                              T.StructType.fromJson(json.loads(metadata.schema_json)), ["id"], spark.version)
        time.sleep(1.0)
        return [add]

    slow_rows = spark.range(10, 14, numPartitions=1).select(slowly("id").alias("id"))
    outcome: dict[str, object] = {}

    def slow_append():
        options = {"app_id": "test", "txn_version": 1, "user_metadata": "slow", "seen_version": 0}
        try:
            outcome["slow"] = (append_reading_whole_table(spark, location, slow_rows, **options) if slow_writer == "spark"
                               else append_files_reading_whole_table(spark, location, slow_files, **options))
        except Exception as e:  # noqa: BLE001 - the outcome under test
            outcome["slow"] = e

    writer = threading.Thread(target=slow_append)
    writer.start()
    time.sleep(0.5)
    assert append_reading_whole_table(spark, location, spark.range(20, 22), app_id="test", txn_version=1,
                                      user_metadata="quick", seen_version=0) == 1
    writer.join()
    assert isinstance(outcome["slow"], Exception), outcome
    assert caused_by(outcome["slow"], CONCURRENT_MODIFICATION), outcome["slow"]
    assert sorted(r.id for r in spark.read.format("delta").load(location).collect()) == [0, 1, 2, 20, 21]


def test_an_append_to_a_table_dropped_since_it_was_seen_is_refused(spark, table_home):
    """A by-location commit into a dropped table's folder would create a new table there."""
    location = f"{table_home}/table"
    spark.range(3).write.format("delta").save(location)
    spark.range(3).write.format("delta").mode("append").save(location)
    folder = storage.location(location)
    folder.filesystem.delete_dir(folder.path)
    with pytest.raises(TableReplacedError, match="below version 1"):
        append_reading_whole_table(spark, location, spark.range(5), app_id="test", txn_version=1,
                                   user_metadata="late", seen_version=1)
    assert not folder.child("_delta_log").has_any()
