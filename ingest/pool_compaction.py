"""A raw pool's compaction in Python: its small files read with pyarrow and written again as one.

The pool's files are small Parquet files that ingest wrote in Python (ingest/pool.py), one a
cycle. Delta's OPTIMIZE of them cost a Spark job to plan and another to rewrite, 1-4 s of a cycle
on a 2-core machine, and a cycle that compacts holds back the next ingest commit; pyarrow reads
and writes the same bytes in a fraction of that, with no Spark job but the listing of the
snapshot's files.

The commit is OPTIMIZE's in all that readers see (ingest/delta_append.py rewrite_files): one
commit of operation OPTIMIZE whose removes and add have dataChange=false, so growth, freshness and
a mirror's stored cursor pass over it as they pass over Delta's own. What it keeps:
- the rows, each once: they are read from the files the commit removes, and Delta's conflict
  check fails the commit if another compaction removed one of them meanwhile (a kill -9 before
  the commit leaves the new file unnamed by the log, removed by VACUUM: no row lost or doubled);
- the order ingest writes, (topic, partition, offset), within the new file;
- the `zync.pool.topics` tag (zync/pools.py), computed from the rows and checked against the
  removed files' tags merged (rows summed, largest offsets kept per topic and partition), so the
  resume point, growth, freshness and a benchmark's reach read the same after it;
- exact statistics, as ingest writes them (ingest/data_file.py).
A table Python cannot rewrite exactly gets None (the caller runs OPTIMIZE instead): a file with a
deletion vector, a path outside the table's folder, a table not on this machine's file system or
one data_file.not_writable refuses, a file whose columns are not the table's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from ingest import data_file
from ingest.delta_append import LiveFile, TableMetadata, rewrite_files
from zync import storage
from zync.pools import TOPICS_TAG, topics_tag


class NotRewritable(Exception):
    """This compaction is not for Python: OPTIMIZE does it."""


def merge_topic_tags(tags: Iterable[Mapping[str, dict]]) -> dict[str, dict]:
    """Several files' `zync.pool.topics` tags ({topic: {"rows": n, "offsets": {partition: largest offset}}},
    parsed) as the tag of one file holding all their rows: rows summed, the largest offset kept per
    topic and partition."""
    merged: dict[str, dict] = {}
    for tag in tags:
        for topic, held in tag.items():
            entry = merged.setdefault(topic, {"rows": 0, "offsets": {}})
            entry["rows"] += int(held["rows"])
            for partition, offset in held["offsets"].items():
                entry["offsets"][str(partition)] = max(entry["offsets"].get(str(partition), -1), int(offset))
    return {topic: {"rows": held["rows"], "offsets": dict(sorted(held["offsets"].items(), key=lambda p: int(p[0])))}
            for topic, held in sorted(merged.items())}


def row_topics(rows: pa.Table) -> dict[str, dict[int, tuple[int, int]]]:
    """Per topic and partition of the pool's rows, (rows, largest offset)."""
    kafka = rows.column("kafka").combine_chunks()
    keys = pa.table({"t": kafka.field("topic"), "p": kafka.field("partition"), "o": kafka.field("offset")})
    counts: dict[str, dict[int, tuple[int, int]]] = {}
    for entry in keys.group_by(["t", "p"]).aggregate([("o", "count"), ("o", "max")]).to_pylist():
        counts.setdefault(entry["t"], {})[int(entry["p"])] = (int(entry["o_count"]), int(entry["o_max"]))
    return counts


def _tag_of(counts: dict[str, dict[int, tuple[int, int]]]) -> dict:
    """The tag topics_tag writes for `counts`, parsed."""
    return json.loads(topics_tag(counts)[TOPICS_TAG])


def ordered(rows: pa.Table) -> pa.Table:
    """The rows in (topic, partition, offset) order, as ingest writes a file."""
    kafka = rows.column("kafka").combine_chunks()
    keys = pa.table({"t": kafka.field("topic"), "p": kafka.field("partition"), "o": kafka.field("offset")})
    return rows.take(pc.sort_indices(keys, sort_keys=[("t", "ascending"), ("p", "ascending"), ("o", "ascending")]))


def choose(files: list[LiveFile], bound: int, most_bytes: int) -> list[LiveFile]:
    """The files a compaction takes: those under `bound`, smallest first, up to `most_bytes` together
    (one new file; the rest wait for the next compaction); none if that is fewer than two."""
    taken, total = [], 0
    for file in sorted((f for f in files if f.size < bound), key=lambda f: (f.size, f.path)):
        if taken and total + file.size > most_bytes:
            break
        taken.append(file)
        total += file.size
    return taken if len(taken) >= 2 else []


def _read(folder, file: LiveFile, schema: pa.Schema) -> pa.Table:
    path = unquote(file.path)
    if "://" in path or path.startswith("/") or ".." in path.split("/"):
        raise NotRewritable(f"file {file.path} is not in the table's folder")
    try:
        rows = pq.read_table(folder / path, coerce_int96_timestamp_unit="us")
        if rows.schema.names != schema.names:
            raise NotRewritable(f"file {file.path} has columns {rows.schema.names}, not the table's")
        return rows.replace_schema_metadata(None).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise NotRewritable(f"file {file.path} cannot be read as the table's rows: {e}") from None


def compact_pool(spark, location: str, bound_of: Callable[[list[int]], int], most_bytes: int
                 ) -> tuple[int, int, int, int | None] | None:
    """Compact the raw pool at `location` in Python: (files removed, files added, bytes removed, the
    commit's version or None if none), or None if Python cannot (then OPTIMIZE does).

    `bound_of(sizes)`: the size below which files are taken (service/compaction.py tier_bound); at
    most `most_bytes` of them in one compaction.
    """
    table_dir = storage.location(location)
    folder = table_dir.local_path
    if folder is None:
        return None
    done: dict[str, object] = {}

    def rewrite(metadata: TableMetadata, files: list[LiveFile]):
        why = data_file.not_writable(metadata.schema_json, metadata.configuration, metadata.partition_columns)
        if why:
            raise NotRewritable(why)
        taken = choose(files, bound_of([f.size for f in files]), most_bytes)
        if not taken:
            done["counts"] = (0, 0, 0, None)
            return None
        if any(f.has_deletion_vector for f in taken):
            raise NotRewritable("a file has a deletion vector")
        schema = T.StructType.fromJson(json.loads(metadata.schema_json))
        arrow_schema = pa.schema([pa.field(f.name, to_arrow_type(f.dataType), nullable=f.nullable)
                                  for f in schema.fields])
        rows = ordered(pa.concat_tables([_read(folder, f, arrow_schema) for f in taken]))
        counts = row_topics(rows)
        tags = [f.tags.get(TOPICS_TAG) for f in taken]
        if all(tags) and merge_topic_tags(json.loads(t) for t in tags) != _tag_of(counts):
            raise NotRewritable("the files' rows are not what their tags say")
        add = data_file.write(rows, table_dir, schema, data_file.stats_columns(metadata.configuration),
                              spark.version)
        add = {**add, "dataChange": False, "tags": topics_tag(counts)}
        now = int(time.time() * 1000)
        removes = [{"path": f.path, "deletionTimestamp": now, "dataChange": False, "extendedFileMetadata": True,
                    "partitionValues": {}, "size": f.size, **({"tags": f.tags} if f.tags else {})} for f in taken]
        done["counts"] = (len(taken), 1, sum(f.size for f in taken))
        return removes, [add]

    try:
        version = rewrite_files(spark, location, rewrite)
    except NotRewritable:
        return None
    return (*done["counts"][:3], version) if version is not None else done["counts"]
