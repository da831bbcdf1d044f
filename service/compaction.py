"""Compaction of the tables a long-running `zync run` keeps writing.

Every ingest batch adds a file to its raw table, and every writing run of an
output model a file to each of its `out`, `done` and `cursor` partitions; a
mirror's MERGE adds files and deletion vectors. Nothing else removes them, so
a service running for a day would leave tens of thousands of small files, and
every run lists and opens more of them (bench/file_growth.py: 5,700 added
files took a writing `dbt run` from ~8 s to 11-15 s).

Compaction is Delta's own OPTIMIZE (bin-packing): one commit with
dataChange=false that replaces small files with fewer larger ones holding the
same rows, so no reader sees a row added, lost or changed, and ingest's and
egress's resume points, the cursors, the done rows and a mirror's stored
cursor (which passes over OPTIMIZE commits) are untouched.

What it rewrites is chosen so that each byte is rewritten a few times at most,
whatever the table's age. The files a compaction replaces stay on disk until
VACUUM removes them after --vacuum-retention (7 days by default, for time
travel), so a compaction that rewrote every small file each time (Delta's
OPTIMIZE left to its own minFileSize) would rewrite a table's earlier
compacted file again and again, and keep every copy for a week: bytes on disk
quadratic in the table's age (bench/soak.py measured it). Instead, per
partition, files are taken smallest first, and a file is taken only if the
smaller files taken before it are together at least as large, or the one just
before it at least half its size (tier_bound): a compacted file is rewritten
only into one at least 1.5 times its size, so each byte is rewritten at most
log1.5(MIN_FILE_BYTES / its first file's size) times (in practice a few), and
the files left are a short series of growing sizes.
- files at least MIN_FILE_BYTES are never rewritten;
- a bin holds at most MAX_FILE_BYTES. Bins mix the offsets of the files they
  take, so a compacted file spans from its oldest to its newest record: the
  runs' scans from the cursors (which skip files by their largest offset)
  read it until the cursors pass the moment it was compacted, usually the
  next run, and skip it after that.

`zync run` compacts a table once COMPACT_AFTER_COMMITS commits (anyone's), or
up to a quarter fewer (compaction_due_after), have landed on it since its last
OPTIMIZE, as a stage of its cycle, between
its own writes: its own stages never race it. A cycle compacts a few tables at
most (compactions_per_cycle), the most commits behind first, so tables that
reach the threshold together are compacted over the next cycles instead of
stalling one. Another process's write that
read a file a compaction removed (a hand-run `dbt run` of the same output)
either commits, or fails with Delta's ConcurrentDeleteReadException and
writes nothing; either way the rows it read were the same rows.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ingest.pool_compaction import compact_pool as rewrite
from zync import storage
from zync.delta_metadata import history, live_file_sizes
from zync.errors import ZyncError
from zync.spark import session_conf
from zync.spark_internals import delta_log

COMPACT_AFTER_COMMITS = 50  # commits since a table's last OPTIMIZE before `zync run` compacts it
MIN_FILE_BYTES = 16 * 1024 * 1024  # files at least this large are never rewritten
MAX_FILE_BYTES = 64 * 1024 * 1024  # the largest file a compaction writes (a bin's size)

OPTIMIZE = "OPTIMIZE"
# Commits that add no data file: not counted toward a compaction (an empty CREATE TABLE before a
# table's first rows, properties, columns). Counted, a new table was due with its one file.
ADDS_NO_FILES = frozenset({"CREATE TABLE", "SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "ADD COLUMNS",
                           "CHANGE COLUMN", "REPLACE COLUMNS", "VACUUM START", "VACUUM END"})
COMPACTIONS_PER_CYCLE = 2  # the fewest tables one cycle may compact


def compactions_per_cycle(tables: int, compact_after: int) -> int:
    """How many of `tables` one cycle compacts at most.

    A table gains about one commit a cycle from `zync run` (an ingest batch, an
    output's run), so each needs a compaction every `compact_after` cycles or
    so: twice tables/compact_after a cycle keeps up with all of them and with
    other writers' commits.
    """
    return max(COMPACTIONS_PER_CYCLE, -(-2 * tables // max(compact_after, 1)))


def compaction_due_after(table: str, compact_after: int) -> int:
    """The commits after which `zync run` compacts `table`: `compact_after`, or up to a quarter fewer.

    The same for a table every time (a hash of its name). Tables created together reach one
    threshold in the same cycle, and each counting from its own compaction they would stay in step
    for the life of the run (with the mirrors' folds, due after as many raw commits): a few cycles
    doing all the compactions every `compact_after` cycles, and latency with a period (bench/soak.py).
    With thresholds of their own they drift apart, and the cycles share the work.
    """
    return compact_after - zlib.crc32(table.encode()) % (compact_after // 4 + 1)


@dataclass(frozen=True)
class Compaction:
    """What one OPTIMIZE of a table did."""

    table: str
    files_removed: int
    files_added: int
    bytes_removed: int
    seconds: float
    version: int | None = None  # its commit, where known (a compaction in Python knows it)
    how: str = "optimize"  # or "python" (ingest/pool_compaction.py)


def tier_bound(sizes: Iterable[int]) -> int:
    """The size below which one partition's files are rewritten: the smallest file not taken.

    Smallest first, a file is taken when the files taken before it hold at least its size, or the
    one just before it is at least half its size (files of about one size go together, whatever
    their spread); files of MIN_FILE_BYTES and more never are. Either way a file taken is rewritten
    into one at least 1.5 times its size. A run of one file is no run (OPTIMIZE leaves a bin of one
    file as it is): then the run starts at the next file, and the smaller ones go with it, into a
    file larger than all of them. Without that, one small file followed by larger ones of about one
    size (an output's first run, then its usual runs) held them all back, run after run.
    """
    small = sorted(s for s in sizes if s < MIN_FILE_BYTES)
    runs = (end for start in range(len(small)) if (end := _run_end(small, start)) - start >= 2)
    end = next(runs, _run_end(small, 0))  # no run: the smallest file alone, which OPTIMIZE leaves
    return small[end] if end < len(small) else MIN_FILE_BYTES


def _run_end(small: list[int], start: int) -> int:
    """The index after the files tier_bound's rule takes from small[start] on."""
    taken = previous = 0
    for index in range(start, len(small)):
        size = small[index]
        if taken and size > taken and size > 2 * previous:
            return index
        taken, previous = taken + size, size
    return len(small)


def compaction_bound(partitions: Mapping[object, Iterable[int]]) -> int:
    """Delta OPTIMIZE's minFileSize for a table whose files are `partitions` (their sizes by partition).

    One bound for the whole table (OPTIMIZE takes one): the lowest of its partitions'. In every
    partition the files under it are a prefix of what tier_bound would take there; a partition that
    could take more does at a later compaction (tests/unit/test_compaction_tiers.py simulates it).
    """
    return min((tier_bound(sizes) for sizes in partitions.values()), default=MIN_FILE_BYTES)


def compaction_settings(min_file_bytes: int = MIN_FILE_BYTES) -> dict[str, str]:
    """The session settings that bound a compaction (Delta's OPTIMIZE file sizes)."""
    return {
        "spark.databricks.delta.optimize.minFileSize": str(min_file_bytes),
        "spark.databricks.delta.optimize.maxFileSize": str(MAX_FILE_BYTES),
    }


def compaction_state(spark, table: str, limit: int, location: str | None = None) -> tuple[int, float | None]:
    """(commits since the table's last OPTIMIZE that added files, among the newest `limit`; its time in
    epoch seconds, if seen).

    Reads the newest `limit` entries of the table's history (commit files,
    no Spark job over the data; at its `location`, if given and local): what
    lets a restarted `zync run` pick up the count where the last one left it.
    """
    count = 0
    for entry in history(spark, table, limit, location):
        if entry.operation == OPTIMIZE:
            return count, entry.timestamp.timestamp()
        count += entry.operation not in ADDS_NO_FILES
    return count, None


def compact(spark, table: str, location: str, parquet_settings: dict[str, str] | None = None) -> Compaction:
    """OPTIMIZE `table` (stored at `location`) within the bounds above (Parquet files encoded as
    `parquet_settings` say, if given).

    It commits nothing when it removes no file.
    """
    started = time.monotonic()
    bound = compaction_bound(live_file_sizes(spark, location))
    with session_conf(spark, {**compaction_settings(bound), **(parquet_settings or {})}):
        metrics = spark.sql(f"optimize {table}").first()["metrics"]
    removed = metrics["filesRemoved"]
    return Compaction(table, int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"]),
                      int(removed["totalSize"]) if removed else 0, time.monotonic() - started)


def compact_pool(spark, table: str, location: str, parquet_settings: dict[str, str] | None = None) -> Compaction:
    """Compact the raw pool `table` in Python (ingest/pool_compaction.py) within the bounds above, or by
    OPTIMIZE (compact) where Python cannot rewrite its files exactly."""
    started = time.monotonic()
    done = rewrite(spark, location, tier_bound, MAX_FILE_BYTES)
    if done is None:
        return compact(spark, table, location, parquet_settings)
    removed, added, removed_bytes, version = done
    return Compaction(table, removed, added, removed_bytes, time.monotonic() - started, version, "python")


def last_checkpoint(location: str) -> int:
    """The version of the table's last checkpoint, as its _last_checkpoint file says (-1: none, or not
    readable): a file read, no JVM call."""
    try:
        text = storage.location(location).child("_delta_log", "_last_checkpoint").read_text()
        return int(json.loads(text)["version"])
    except (OSError, ValueError, KeyError, TypeError, ZyncError):
        return -1


def checkpoint(spark, location: str) -> None:
    """Write a checkpoint of the table's newest version (Delta's own, as a commit at a checkpoint
    interval writes it)."""
    delta_log(spark, location).checkpoint()
