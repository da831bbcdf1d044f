"""Delta tables' metadata: where a table lives, its versions and commits, its history, its checksums, its schema.

Every reader of a table's log goes through here, and in a process with Spark the log is read one
way: Delta's own DeltaLog on the driver (zync/spark_internals.py), which lists the _delta_log
folder and reads commits' JSON without a Spark job, in milliseconds; `zync run` asks it for
versions every cycle. Where another reader is used (the catalog, DESCRIBE HISTORY, commit files, the checksum
file, delta-rs), its function says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NamedTuple

from zync import storage
from zync.errors import ZyncError
from zync.spark_internals import delta_log, delta_tables, java_class, java_session, latest_snapshot, python_frame

# How much of a checksum file checksum_figures reads first: its transaction id and figures come first.
CHECKSUM_HEAD_BYTES = 1024

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import SparkSession


class HistoryEntry(NamedTuple):
    """One commit as the table's history shows it."""

    version: int
    operation: str  # WRITE, MERGE, OPTIMIZE, ...
    timestamp: datetime
    user_metadata: str | None


def table_location(spark: SparkSession, name: str) -> str:
    """The storage location (a URI, e.g. file:/...) of a catalog table; `name` as SQL spells it (quoted).

    Asked of the catalog (one metastore call): DeltaLog takes a location, not a name. Not DESCRIBE
    DETAIL: it also counts the table's files, a Spark job over its log, which `zync run` paid for
    every table of a database at its first append in Python and its first look at the versions.
    Written as DESCRIBE DETAIL writes it (Hadoop's Path, not the catalog's escaped URI). Callers
    keep the answer while the table is there.
    """
    session = java_session(spark)
    state = session.sessionState()
    metadata = state.catalog().getTableMetadata(state.sqlParser().parseTableIdentifier(name))
    if metadata.tableType().name() == "VIEW":  # a view has no files: its location is no answer
        raise ZyncError(f"{name} is a view, not a Delta table: it has no files to read or write. If it is the raw "
                        "view of a topic kept in a raw pool (`pool:` in its mirror entry), its rows are in that pool "
                        "and `zync from-kafka --topic` of the topic fills it; otherwise name a table.")
    return str(java_class(spark, "org.apache.hadoop.fs.Path")(metadata.location()).toString())


def default_location(spark: SparkSession, name: str) -> str:
    """Where the catalog puts a new managed table `name` (quoted as SQL spells it), as table_location writes it:
    the database's folder and the table's name. Its database must exist."""
    state = java_session(spark).sessionState()
    uri = state.catalog().defaultTablePath(state.sqlParser().parseTableIdentifier(name))
    return str(java_class(spark, "org.apache.hadoop.fs.Path")(uri).toString())


def first_commit_info(location: str) -> dict[str, Any] | None:
    """The commitInfo of version 0 of the Delta table at `location` (a folder or an object store), None if
    that commit is not there."""
    try:
        return _commit_info(storage.location(location).child("_delta_log", f"{0:020d}.json"))
    except (OSError, ValueError, ZyncError):
        return None


def is_delta_table(spark: SparkSession, location: str) -> bool:
    return bool(delta_tables(spark).isDeltaTable(java_session(spark), location))


def _version_and_id(snapshot) -> tuple[int, str | None]:
    """(a snapshot's version, the table's id); (-1, None) for a snapshot of no table."""
    version = int(snapshot.version())
    if version < 0:
        return version, None
    return version, str(snapshot.metadata().id())


def latest_version(spark: SparkSession, location: str) -> tuple[int, str | None]:
    """(the newest version, the table's id); (-1, None) when no table is there (any more)."""
    return _version_and_id(latest_snapshot(spark, delta_log(spark, location)))


def held_version(spark: SparkSession, location: str) -> tuple[int, str | None]:
    """(the version, the table's id) of the newest snapshot of the table this engine holds, its log not
    read: after this engine's own commit, that commit's version (Delta's snapshot after a commit)."""
    return _version_and_id(delta_log(spark, location).unsafeVolatileSnapshot())


def latest_transaction(spark: SparkSession, location: str, app_id: str) -> tuple[int, int]:
    """(the newest version, the last idempotent-write version of `app_id` in it, -1 for none), from one snapshot."""
    snapshot = latest_snapshot(spark, delta_log(spark, location))
    found = snapshot.transactions().get(app_id)
    return int(snapshot.version()), int(found.get()) if found.isDefined() else -1


def live_file_sizes(spark: SparkSession, location: str) -> dict[tuple, list[int]]:
    """The sizes in bytes of the newest version's data files, by partition (a tuple of its values).

    A Spark job over the snapshot's state, which Delta keeps cached on the driver: no data file is read.
    """
    files = python_frame(spark, latest_snapshot(spark, delta_log(spark, location)).allFiles())
    sizes: dict[tuple, list[int]] = {}
    for row in files.select("partitionValues", "size").collect():
        sizes.setdefault(tuple(sorted((row["partitionValues"] or {}).items())), []).append(int(row["size"]))
    return sizes


def _changes(spark: SparkSession, location: str, start: int, end: int | None,
             fail_on_gap: bool) -> Iterator[tuple[int, JavaObject]]:
    log = delta_log(spark, location)
    changes = (log.getChanges(int(start), fail_on_gap) if end is None
               else log.getChanges(int(start), int(end), fail_on_gap))
    while changes.hasNext():
        change = changes.next()
        yield int(change._1()), change._2()


def commit_actions(spark: SparkSession, location: str, start: int) -> Iterator[tuple[int, list[JavaObject]]]:
    """(version, its actions as Delta's objects) of each commit from `start` to the newest, oldest first.

    The objects, not their JSON: a commitInfo's text is not always valid JSON, and its operation
    metrics and user metadata are read from it. A commit whose file is gone is passed over.
    """
    for version, actions in _changes(spark, location, start, None, False):
        yield version, [actions.apply(i) for i in range(actions.size())]


def commit_texts(spark: SparkSession, location: str, start: int, end: int) -> Iterator[tuple[int, list[str]]]:
    """(version, its actions' JSON text) of each commit from `start` to `end`, oldest first.

    Raises when a commit's file is gone (a log cleaned up): the caller cannot count what it missed.
    The commit files are read as files where they can be (a line an action, as Delta wrote them):
    through DeltaLog each action costs a JVM call, and a raw pool's commit adds a file per topic.
    """
    texts = _commit_file_texts(location, start, end)
    if texts is not None:
        yield from texts
        return
    for version, seq in _changes(spark, location, start, end, True):
        texts, actions = [], seq.iterator()
        while actions.hasNext():
            texts.append(actions.next().json())
        yield version, texts


def history(spark: SparkSession, name: str, limit: int, location: str | None = None) -> list[HistoryEntry]:
    """The newest `limit` commits of a catalog table (`name` as SQL spells it), newest first.

    Given the table's `location` on this machine's file system, its commit files are read there
    (history_from_files). Else DESCRIBE HISTORY rather than DeltaLog: one JVM call returns the few
    fields wanted from every commit, where walking DeltaLog's commits from Python costs a py4j round
    trip per action.
    """
    if location is not None:
        entries = history_from_files(location, limit)
        if entries is not None:
            return entries
    rows = (spark.sql(f"describe history {name} limit {int(limit)}")
            .select("version", "operation", "timestamp", "userMetadata").collect())
    return [HistoryEntry(int(r["version"]), r["operation"], r["timestamp"], r["userMetadata"]) for r in rows]


def _commit_file_texts(location: str, start: int, end: int) -> list[tuple[int, list[str]]] | None:
    """(version, its lines) of each commit file from `start` to `end`; None if one cannot be read."""
    try:
        log = storage.location(location).child("_delta_log")
        return [(version, [line for line in log.child(f"{version:020d}.json").read_text().splitlines() if line])
                for version in range(int(start), int(end) + 1)]
    except (OSError, ValueError, ZyncError):
        return None


def history_from_files(location: str, limit: int) -> list[HistoryEntry] | None:
    """The newest `limit` commits of the Delta table at `location` (a folder or an object store), newest
    first, read from its commit files; None if a commit file cannot be read as Delta writes it.

    DESCRIBE HISTORY costs a statement's parse, analysis and the table's snapshot, ~0.4 s a table
    beside a busy `zync run` (2026-11-28, 2 cores): paid for each of a 200-table database's 400
    tables, that was minutes of the cycle after the first build. A commit's time here is its file's
    modification time, as Delta's history gives it for a table without in-commit timestamps; a
    commit whose file a log cleanup removed is not there, as it is not in DESCRIBE HISTORY.
    """
    if limit <= 0:
        return None
    try:
        log = storage.location(location).child("_delta_log")
        commits = sorted((e for e in log.entries() if e.name.endswith(".json") and e.name[:-5].isdigit()),
                         key=lambda e: int(e.name[:-5]), reverse=True)[:limit]
        entries = []
        for commit in commits:
            info = _commit_info(log.child(commit.name))
            if info is None:
                return None
            # In milliseconds, as Hadoop's file status gives Delta the time.
            modified = datetime.fromtimestamp(commit.mtime_ms / 1000, tz=timezone.utc)
            entries.append(HistoryEntry(int(commit.name[:-5]), info["operation"], modified, info.get("userMetadata")))
        return entries
    except (OSError, ValueError, KeyError, TypeError, ZyncError):
        return None


def _commit_info(commit: storage.Location) -> dict[str, Any] | None:
    """The commitInfo action of a commit file (Delta writes it first), None if it has none."""
    for line in commit.read_text().splitlines():
        if line.startswith('{"commitInfo"'):
            return json.loads(line)["commitInfo"]
    return None


def checksum_figures(location: str | None, version: int) -> tuple[int, int] | None:
    """(files, bytes) of a table's version from Delta's checksum file beside its commit, if it is there.

    Read as a file: DeltaLog reads a checksum only to verify a snapshot it loads, and offers no figures.
    Only the file's head, where Delta writes the two figures before the table's metadata and list of
    files: a raw pool's checksum holds every topic's types and every file, 310 KB at 50 topics, read
    at each of its commits. The whole file is read if the head does not hold them.
    """
    if not location:
        return None
    try:
        checksum = storage.location(location).child("_delta_log", f"{version:020d}.crc")
        head = checksum.read_head(CHECKSUM_HEAD_BYTES).decode("utf-8", errors="replace").split('"metadata":', 1)[0]
        found = {name: re.search(rf'"{name}":(\d+)[,}}]', head) for name in ("numFiles", "tableSizeBytes")}
        if all(found.values()):
            return int(found["numFiles"].group(1)), int(found["tableSizeBytes"].group(1))
        figures = json.loads(checksum.read_text())
        return int(figures["numFiles"]), int(figures["tableSizeBytes"])
    except (OSError, ValueError, KeyError, ZyncError):
        return None


def schema_without_spark(location: str) -> dict[str, Any] | None:
    """The current schema of the Delta table at `location` (a folder or an object store; Delta's JSON
    struct type), None if there is none.

    Read with delta-rs (`deltalake`), not DeltaLog: `zync etl compile` starts no JVM. delta-rs follows
    checkpoints, so a table whose early commits were cleaned up still has its schema.
    """
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    uri, options = storage.delta_rs_table(location)
    try:
        return json.loads(DeltaTable(uri, storage_options=options or None).schema().to_json())
    except TableNotFoundError:
        return None
