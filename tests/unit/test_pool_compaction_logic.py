"""The pure parts of a raw pool's upkeep: which files a compaction in Python takes, the merged tag, the rows'
order, where the last checkpoint is."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

import ingest.pool_compaction as pool_compaction
from ingest import data_file
from ingest.delta_append import LiveFile, TableMetadata
from ingest.pool_compaction import choose, compact_pool, merge_topic_tags, ordered, row_topics
from service.compaction import last_checkpoint
from zync import storage
from zync.envelope import kafka_struct
from zync.pools import TOPICS_TAG, topics_tag


def _file(name: str, size: int) -> LiveFile:
    return LiveFile(name, size, {}, False)


def test_tags_merge_by_summing_rows_and_keeping_each_partitions_largest_offset():
    first = {"a": {"rows": 3, "offsets": {"0": 7, "1": 2}}, "b": {"rows": 1, "offsets": {"0": 0}}}
    second = {"a": {"rows": 2, "offsets": {"0": 9}}, "c": {"rows": 4, "offsets": {"2": 40}}}
    assert merge_topic_tags([first, second]) == {
        "a": {"rows": 5, "offsets": {"0": 9, "1": 2}}, "b": {"rows": 1, "offsets": {"0": 0}},
        "c": {"rows": 4, "offsets": {"2": 40}}}
    # What topics_tag writes for one file holding them all.
    assert merge_topic_tags([first, second]) == json.loads(topics_tag(
        {"a": {0: (4, 9), 1: (1, 2)}, "b": {0: (1, 0)}, "c": {2: (4, 40)}})[TOPICS_TAG])


def test_the_files_under_the_bound_are_taken_smallest_first_up_to_a_files_worth():
    files = [_file("big", 100), _file("s1", 10), _file("s2", 20), _file("s3", 30)]
    assert [f.path for f in choose(files, bound=50, most_bytes=1000)] == ["s1", "s2", "s3"]
    assert [f.path for f in choose(files, bound=50, most_bytes=35)] == ["s1", "s2"]
    assert choose(files, bound=15, most_bytes=1000) == []  # one file alone is left as it is


def _kafka_rows(keys: list[tuple[str, int, int]]) -> pa.Table:
    kafka = pa.StructArray.from_arrays([pa.array([k[0] for k in keys]), pa.array([k[1] for k in keys], pa.int32()),
                                        pa.array([k[2] for k in keys], pa.int64())], ["topic", "partition", "offset"])
    return pa.table({"kafka": kafka, "value": pa.array([f"{k}" for k in keys])})


def test_rows_are_ordered_by_topic_partition_offset_and_counted_per_topic_partition():
    keys = [("b", 0, 5), ("a", 1, 3), ("a", 0, 9), ("a", 0, 2), ("b", 0, 1)]
    rows = ordered(_kafka_rows(keys))
    kafka = rows.column("kafka").combine_chunks()
    got = list(zip(kafka.field("topic").to_pylist(), kafka.field("partition").to_pylist(),
                   kafka.field("offset").to_pylist()))
    assert got == sorted(keys)
    assert rows.column("value").to_pylist() == [f"{k}" for k in sorted(keys)]
    assert row_topics(rows) == {"a": {0: (2, 9), 1: (1, 3)}, "b": {0: (2, 5)}}


def test_the_last_checkpoint_is_read_from_its_file_and_none_is_minus_one(tmp_path):
    log = tmp_path / "_delta_log"
    log.mkdir()
    assert last_checkpoint(tmp_path.as_uri()) == -1
    (log / "_last_checkpoint").write_text('{"version":200,"size":7,"sizeInBytes":1234}')
    assert last_checkpoint(tmp_path.as_uri()) == 200
    (log / "_last_checkpoint").write_text('{"vers')  # being written
    assert last_checkpoint(tmp_path.as_uri()) == -1


def test_a_compaction_reads_the_small_files_and_gives_one_file_of_their_rows_with_the_merged_tag(tmp_path, monkeypatch):
    schema = T.StructType([T.StructField("kafka", kafka_struct()), T.StructField("key", T.StringType()),
                           T.StructField("value", T.StringType())])
    arrow_schema = pa.schema([pa.field(f.name, to_arrow_type(f.dataType), nullable=f.nullable) for f in schema.fields])
    folder = storage.location(tmp_path.as_uri())
    files, tags = [], []
    for batch in range(3):  # ingest's files: each in (topic, partition, offset) order, with its tag
        keys = sorted((f"t{(i + batch) % 2}", i % 2, batch * 10 + i) for i in range(4))
        kafka = pa.StructArray.from_arrays(
            [pa.array([k[0] for k in keys]), pa.array([k[1] for k in keys], pa.int32()),
             pa.array([k[2] for k in keys], pa.int64()),
             pa.array([dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)] * 4, pa.timestamp("us", tz="UTC")),
             pa.array([1] * 4, pa.int32()), pa.array([2] * 4, pa.int32())],
            fields=list(arrow_schema.field("kafka").type))
        rows = pa.Table.from_arrays([kafka, pa.array(["{}"] * 4), pa.array([str(k) for k in keys])],
                                    schema=arrow_schema)
        add = data_file.write(rows, folder, schema, ["kafka", "key"], "3.5.7")
        tag = topics_tag(row_topics(rows))
        files.append(LiveFile(add["path"], add["size"], tag, False))
        tags.append(json.loads(tag[TOPICS_TAG]))
    files.append(LiveFile("big.parquet", 10 ** 9, {}, False))  # over the bound: left alone, never opened
    committed = {}

    def commit(spark, location, rewrite):
        metadata = TableMetadata(schema.json(), {data_file.STATS_COLUMNS_PROPERTY: "kafka,key"}, ())
        committed["actions"] = rewrite(metadata, files)
        return 7

    monkeypatch.setattr(pool_compaction, "rewrite_files", commit)
    spark = type("Spark", (), {"version": "3.5.7"})()
    assert compact_pool(spark, tmp_path.as_uri(), lambda sizes: 10 ** 6, 10 ** 8) == \
        (3, 1, sum(f.size for f in files[:3]), 7)
    removes, (add,) = committed["actions"]
    assert sorted(r["path"] for r in removes) == sorted(f.path for f in files[:3])
    assert all(r["dataChange"] is False for r in removes) and add["dataChange"] is False
    assert json.loads(add["tags"][TOPICS_TAG]) == merge_topic_tags(tags)
    rows = pq.read_table(tmp_path / add["path"])
    kafka = rows.column("kafka").combine_chunks()
    keys = list(zip(kafka.field("topic").to_pylist(), kafka.field("partition").to_pylist(),
                    kafka.field("offset").to_pylist()))
    assert keys == sorted(keys) and len(keys) == 12
    assert rows.column("value").to_pylist() == [str(k) for k in keys]  # each row's own columns moved with it
    stats = json.loads(add["stats"])
    assert stats["numRecords"] == 12 and stats["maxValues"]["kafka"]["offset"] == 23


def test_a_file_with_a_deletion_vector_or_outside_the_tables_folder_is_left_to_optimize(tmp_path, monkeypatch):
    def commit(files):
        def rewrite_files(spark, location, rewrite):
            schema = T.StructType([T.StructField("kafka", kafka_struct()), T.StructField("key", T.StringType()),
                                   T.StructField("value", T.StringType())])
            return rewrite(TableMetadata(schema.json(), {data_file.STATS_COLUMNS_PROPERTY: "kafka"}, ()), files)
        return rewrite_files

    spark = type("Spark", (), {"version": "3.5.7"})()
    monkeypatch.setattr(pool_compaction, "rewrite_files",
                        commit([LiveFile("a", 1, {}, True), LiveFile("b", 1, {}, False)]))
    assert compact_pool(spark, tmp_path.as_uri(), lambda sizes: 10, 100) is None
    monkeypatch.setattr(pool_compaction, "rewrite_files", commit([LiveFile("/elsewhere/a", 1, {}, False),
                                                                  LiveFile("b", 1, {}, False)]))
    assert compact_pool(spark, tmp_path.as_uri(), lambda sizes: 10, 100) is None
