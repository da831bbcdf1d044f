"""The pure parts of a raw pool's upkeep: which files a compaction in Python takes, the merged tag, the rows'
order, where the last checkpoint is."""

from __future__ import annotations

import json

import pyarrow as pa

from ingest.delta_append import LiveFile
from ingest.pool_compaction import choose, merge_topic_tags, ordered, row_topics
from service.compaction import last_checkpoint
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
