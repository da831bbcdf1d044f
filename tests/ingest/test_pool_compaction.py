"""A raw pool compacted in Python on the real broker, registry and Delta: the same rows, tags, resume point
and history after it; an ingest that meets its commit commits again, one that meets another ingest's stops;
a compaction cut short before its commit leaves the pool as it was."""

from __future__ import annotations

import json

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import ingest.pool as pool_module
from ingest import data_file
from ingest.pool import PoolIngest
from ingest.pool_compaction import merge_topic_tags
from service.compaction import compact_pool
from service.versions import TableVersion, TableVersions
from tests.ingest.conftest import unique, watermarks
from tests.ingest.schemas import KEY, ROW_V1, envelope, event
from zync import storage
from zync.delta_metadata import latest_snapshot, table_location
from zync.errors import ZyncError
from zync.pools import TOPICS_TAG
from zync.spark_internals import delta_log, python_frame
from zync.tables import raw_table_name


class Killed(BaseException):
    """The process ending where it stands (no `except Exception` catches it)."""


def _pool(target, spark, topics: list[str], name: str) -> PoolIngest:
    return PoolIngest(target, f"zync.{name}", {t: f"zync.{raw_table_name(t)}_pooled" for t in topics}, spark)


def _send(producer, topic: str, ids: range, partition: int = 0) -> None:
    producer.send(topic, KEY, envelope(ROW_V1),
                  [({"id": i}, event("c", {"id": i, "name": f"n{i}", "qty": i})) for i in ids], partition=partition)


def _rows(spark, relation: str, version: int | None = None) -> list:
    at = f" version as of {version}" if version is not None else ""
    return [tuple(r) for r in spark.sql(f"select kafka.topic, kafka.partition, kafka.offset, key, value "
                                        f"from {relation}{at} order by 1, 2, 3").collect()]


def _live(spark, location: str) -> list:
    return python_frame(spark, latest_snapshot(spark, delta_log(spark, location)).allFiles()) \
        .select("path", "tags", "stats", "dataChange").collect()


def _version(spark, location: str) -> int:
    return int(latest_snapshot(spark, delta_log(spark, location)).version())


def _filled_pool(producer, target, spark, batches: int = 4):
    """A pool of two topics (one of two partitions) after `batches` runs: a file each."""
    one, two = producer.topic(unique("pc_one")), producer.topic(unique("pc_two"), partitions=2)
    job = _pool(target, spark, [one, two], unique("pc_pool"))
    for batch in range(batches):
        _send(producer, one, range(batch * 3, batch * 3 + 3))
        _send(producer, two, range(batch, batch + 1), partition=batch % 2)
        assert job.run(watermarks(target, [one, two])).total == 4
    return job, one, two


def test_a_pool_compacted_in_python_keeps_its_rows_tags_resume_point_and_history(producer, target, spark):
    job, one, two = _filled_pool(producer, target, spark)
    try:
        table = job.pool.sql_name
        location = table_location(spark, table)
        before_version = _version(spark, location)
        before = _rows(spark, table)
        tags = [json.loads(r["tags"][TOPICS_TAG]) for r in _live(spark, location)]
        assert len(tags) == 4

        done = compact_pool(spark, table, location)

        assert (done.how, done.files_removed, done.files_added, done.version) == ("python", 4, 1, before_version + 1)
        assert _rows(spark, table) == before
        assert _rows(spark, table, before_version) == before  # time travel to before it
        live = _live(spark, location)
        assert len(live) == 1 and live[0]["dataChange"] is False
        # The merged tag: rows summed, the largest offset per topic and partition.
        assert json.loads(live[0]["tags"][TOPICS_TAG]) == merge_topic_tags(tags) == {
            one: {"rows": 12, "offsets": {"0": 11}}, two: {"rows": 4, "offsets": {"0": 1, "1": 1}}}
        stats = json.loads(live[0]["stats"])
        assert stats["numRecords"] == 16
        assert (stats["minValues"]["kafka"]["offset"], stats["maxValues"]["kafka"]["offset"]) == (0, 11)
        # In the order ingest writes: (topic, partition, offset).
        folder = storage.location(location).local_path
        kafka = pq.read_table(folder / live[0]["path"]).column("kafka").combine_chunks()
        order = list(zip(kafka.field("topic").to_pylist(), kafka.field("partition").to_pylist(),
                         kafka.field("offset").to_pylist()))
        assert order == sorted(order)
        assert pc.count(kafka.field("offset")).as_py() == 16
        history = spark.sql(f"describe history {table} limit 1").first()
        assert history["operation"] == "OPTIMIZE"
        # Growth and freshness pass over it: no rows, no commit of either topic.
        versions = TableVersions(spark)
        table_id = versions.version(job.pool.name).table_id
        for topic in (one, two):
            growth = versions.growth(job.pool.name, TableVersion(table_id, before_version),
                                     TableVersion(table_id, before_version + 1), topic)
            assert (growth.commits, growth.rows) == (0, 0)
    finally:
        job.close()

    # A new ingest resumes from the compacted pool: nothing read twice.
    again = _pool(target, spark, [one, two], job.pool.name.split(".")[1])
    try:
        marks = watermarks(target, [one, two])
        assert again.waiting(marks) == {}
        _send(producer, one, range(100, 102))
        assert again.run(watermarks(target, [one, two])).records == {one: 2}
    finally:
        again.close()
    offsets = [(t, p, o) for t, p, o, _, _ in _rows(spark, table)]
    assert offsets == sorted(set(offsets)) and len(offsets) == 18


def test_an_ingest_meeting_a_compaction_commits_again_and_one_meeting_another_ingest_stops(
        producer, target, spark, monkeypatch):
    job, one, two = _filled_pool(producer, target, spark, batches=3)
    table = job.pool.sql_name
    location = table_location(spark, table)
    arrow = pool_module._arrow

    def compacted_meanwhile(rows, schema):  # called inside the ingest's transaction, before its commit
        assert compact_pool(spark, table, location).files_removed == 3
        return arrow(rows, schema)

    try:
        _send(producer, one, range(50, 53))
        monkeypatch.setattr(pool_module, "_arrow", compacted_meanwhile)
        assert job.run(watermarks(target, [one, two])).records == {one: 3}
        monkeypatch.setattr(pool_module, "_arrow", arrow)
        operations = [r["operation"] for r in spark.sql(f"describe history {table} limit 2").collect()]
        assert operations == ["WRITE", "OPTIMIZE"]
        offsets = [(t, p, o) for t, p, o, _, _ in _rows(spark, table)]
        assert offsets == sorted(set(offsets)) and len(offsets) == 15

        # Another ingest of the same pool committing meanwhile is a writer: this one stops, nothing twice.
        other = _pool(target, spark, [one, two], job.pool.name.split(".")[1])

        def other_ingest_meanwhile(rows, schema):
            monkeypatch.setattr(pool_module, "_arrow", arrow)  # the other ingest's own rows
            assert other.run(watermarks(target, [one, two])).records == {one: 2}
            return arrow(rows, schema)

        _send(producer, one, range(60, 62))
        monkeypatch.setattr(pool_module, "_arrow", other_ingest_meanwhile)
        try:
            with pytest.raises(ZyncError, match="another ingest is writing"):
                job.run(watermarks(target, [one, two]))
        finally:
            other.close()
    finally:
        job.close()
    offsets = [(t, p, o) for t, p, o, _, _ in _rows(spark, table)]
    assert offsets == sorted(set(offsets)) and len(offsets) == 17


def test_a_compaction_cut_short_before_its_commit_leaves_the_pool_as_it_was(producer, target, spark, monkeypatch):
    job, _, _ = _filled_pool(producer, target, spark, batches=3)
    job.close()
    table = job.pool.sql_name
    location = table_location(spark, table)
    version, before = _version(spark, location), _rows(spark, table)
    folder = storage.location(location).local_path

    write = data_file.write

    def killed(*args, **kwargs):  # after the new file is written, before the commit: what a kill -9 there leaves
        write(*args, **kwargs)
        raise Killed

    monkeypatch.setattr(data_file, "write", killed)
    with pytest.raises(Killed):
        compact_pool(spark, table, location)
    monkeypatch.undo()
    assert _version(spark, location) == version and _rows(spark, table) == before
    assert len(list(folder.glob("*.parquet"))) == 4  # the three live files and one no commit names
    assert compact_pool(spark, table, location).files_removed == 3
    assert _rows(spark, table) == before
    assert TableVersions(spark).version(job.pool.name).version == version + 1
