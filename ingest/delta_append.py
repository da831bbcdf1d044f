"""A raw table's append as one Delta commit that fails if another writer added data since it began.

Delta's idempotent write (a DataFrame write's txnAppId/txnVersion options) looks the app's last
version up in the table's reconstructed state. Delta 3.3 reads it from no checksum: it runs a
Spark job of three stages over the table's log at every commit, half a second for a small
table, about two thirds of an append's time, paid once per table and cycle by `zync run`.

This commit runs Delta's own write (WriteIntoDelta: Parquet files, statistics, schema merge)
inside a transaction that declares it read the whole table (OptimisticTransaction.readWholeTable).
Delta's conflict check then fails the commit when another commit added or removed data since the
transaction's snapshot (ConcurrentAppendException, ConcurrentDeleteReadException), which is what a
second ingest racing for the table does. The commit still records the SetTransaction, so the log
reads as an idempotent write's did: the resume point and the race checks (ingest/table.py) are unchanged.

A small batch's file may be written in Python instead (ingest/arrow_rows.py, ingest/data_file.py):
the same transaction then commits that file's `add` action, written for the schema the transaction
read, so nothing but the write job differs.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from zync.spark import session_conf
from zync.spark_internals import delta_log, java_class, java_context, java_frame, java_session, python_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# For an empty table's first commit: its checksum file goes without the list of its files, none.
# Delta derives that list for a new table from an empty one by a Spark job of its own, ~120 ms of a
# create on a warm engine; the next commit's checksum lists the files again, from no files. Not for
# a first commit with files: the next commit would list them by reading the whole table's state.
NEW_TABLE_SETTINGS = {"spark.databricks.delta.allFilesInCrc.enabled": "false"}
# A commit's userMetadata for writes that take no writer option for it (a create's, by name or here).
USER_METADATA_SETTING = "spark.databricks.delta.commitInfo.userMetadata"
# What Delta throws when a commit meets a concurrent one it conflicts with.
CONCURRENT_MODIFICATION = "io.delta.exceptions.DeltaConcurrentModificationException"


class TableExistsAtLocationError(Exception):
    """A table's first commit found a table at its location already (another writer created it first)."""


class TableReplacedError(Exception):
    """The table's log is older than a version this writer saw: it was dropped (and perhaps re-created)."""


def append_reading_whole_table(spark: SparkSession, location: str, frame: DataFrame, *, app_id: str,
                               txn_version: int, user_metadata: str, seen_version: int) -> int:
    """Append `frame` to the Delta table at `location` as one commit; its version.

    The commit merges new columns into the table's schema (mergeSchema), carries `user_metadata`
    in its commitInfo and the SetTransaction (`app_id`, `txn_version`). It fails with a
    DeltaConcurrentModificationException if a commit after the transaction's snapshot added or
    removed data, and with TableReplacedError if the table is at a version below `seen_version`
    (a by-location write would otherwise create a table in a dropped one's folder).
    """
    with _active_session(spark):
        session = java_session(spark)
        scala = java_class(spark, "org.apache.spark.api.python.PythonUtils")
        none = java_class(spark, "scala.Option").empty()
        log, txn = _start(spark, location, seen_version)
        options = java_class(spark, "org.apache.spark.sql.delta.DeltaOptions")(
            scala.toScalaMap({"mergeSchema": "true", "userMetadata": user_metadata}), session.sessionState().conf())
        write = java_class(spark, "org.apache.spark.sql.delta.commands.WriteIntoDelta")(
            log, java_class(spark, "org.apache.spark.sql.SaveMode").Append, options, scala.toSeq([]),
            scala.toScalaMap({}), java_frame(frame), none, none)
        return _commit(spark, txn, write.write(txn, session, none, False), app_id, txn_version, user_metadata)


@dataclass(frozen=True)
class TableMetadata:
    """What a writer of files outside Spark must follow, as a transaction read it."""

    schema_json: str  # the table's schema, Delta's JSON
    configuration: dict[str, str]  # its properties (delta.*)
    partition_columns: tuple[str, ...]


def append_files_reading_whole_table(spark: SparkSession, location: str,
                                     write_files: Callable[[TableMetadata], list[dict] | None], *, app_id: str,
                                     txn_version: int, user_metadata: str, seen_version: int,
                                     properties: Mapping[str, str] | None = None,
                                     read: Callable[[int], None] | None = None) -> int | None:
    """Commit data files written outside Spark to the Delta table at `location`, as one commit; its
    version, or None if `write_files` wrote none.

    `write_files` gets the table's metadata as this transaction read it, writes the files in the
    table's folder and gives their `add` actions (Delta's JSON, as dicts); None commits nothing.
    The commit is append_reading_whole_table's in every other way: the same checks, SetTransaction
    and commitInfo, and the table's schema stays the one the files were written for. `properties`
    are set on the table by the same commit: what ingest notes of a batch's writer schemas lands
    with its rows, where an ALTER TABLE after them was a commit of its own (seconds, for each of a
    database's new tables). `read` is called with the version the transaction read, before any file
    is written: what it raises ends the append with nothing written.
    """
    with _active_session(spark):
        _, txn = _start(spark, location, seen_version)
        if read is not None:
            read(int(txn.readVersion()))
        wrapped = _metadata(txn)
        metadata = wrapped["metaData"]
        adds = write_files(TableMetadata(metadata["schemaString"], dict(metadata.get("configuration", {})),
                                         tuple(metadata.get("partitionColumns", ()))))
        if adds is None:
            return None
        action = java_class(spark, "org.apache.spark.sql.delta.actions.Action")
        if properties:
            metadata["configuration"] = {**metadata.get("configuration", {}), **properties}
            txn.updateMetadata(action.fromJson(json.dumps(wrapped)), False)
        actions = java_class(spark, "org.apache.spark.api.python.PythonUtils").toSeq(
            [action.fromJson(json.dumps({"add": add})) for add in adds])
        _write_metrics(spark, txn, adds)
        return _commit(spark, txn, actions, app_id, txn_version, user_metadata)


@dataclass(frozen=True)
class LiveFile:
    """A data file of the snapshot a rewrite's transaction read, as its `add` action names it."""

    path: str  # as the log has it: relative to the table's folder, URL-encoded
    size: int
    tags: dict[str, str]
    has_deletion_vector: bool


# What a rewrite's caller gives: from the metadata and files read, (remove actions, add actions) or None.
Rewrite = Callable[[TableMetadata, list[LiveFile]], tuple[list[dict], list[dict]] | None]


def rewrite_files(spark: SparkSession, location: str, rewrite: Rewrite) -> int | None:
    """Replace data files of the Delta table at `location` by others holding the same rows, as one commit
    of Delta's OPTIMIZE operation; its version, or None if `rewrite` gave nothing to commit.

    `rewrite` gets the metadata and the files of the snapshot this transaction read, writes the new
    files and gives (remove actions, add actions), every one with dataChange=false. Delta's conflict
    check fails the commit when a commit since that snapshot removed one of the same files (another
    compaction: its rows would be doubled) or changed the metadata; appends meanwhile do not conflict,
    as they do not with OPTIMIZE. Its history reads as OPTIMIZE's, which every reader of it passes
    over as a commit that changed no row.
    """
    with _active_session(spark):
        log = delta_log(spark, location)
        txn = log.startTransaction()
        metadata = _metadata(txn)["metaData"]
        rows = python_frame(spark, txn.snapshot().allFiles()).select(
            "path", "size", "tags", (F.col("deletionVector").isNotNull()).alias("dv")).collect()
        files = [LiveFile(r["path"], int(r["size"]), dict(r["tags"] or {}), bool(r["dv"])) for r in rows]
        done = rewrite(TableMetadata(metadata["schemaString"], dict(metadata.get("configuration", {})),
                                     tuple(metadata.get("partitionColumns", ()))), files)
        if done is None:
            return None
        removes, adds = done
        if any(a.get("dataChange", True) for a in adds) or any(r.get("dataChange", True) for r in removes):
            raise ValueError("a rewrite changes no data: every action has dataChange=false")
        action = java_class(spark, "org.apache.spark.sql.delta.actions.Action")
        scala = java_class(spark, "org.apache.spark.api.python.PythonUtils")
        actions = scala.toSeq([action.fromJson(json.dumps({"remove": r})) for r in removes]
                              + [action.fromJson(json.dumps({"add": a})) for a in adds])
        operation = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations$Optimize")(
            scala.toSeq([]), scala.toSeq([]), False, java_class(spark, "scala.Option").empty(), False)
        return int(txn.commit(actions, operation))


_METADATA_CACHE: dict[int, str] = {}  # the metadata's hash -> its JSON, the last few tables' (see _metadata)


def _metadata(txn) -> dict:
    """The transaction's table metadata, Delta's JSON (a copy to change at will).

    As one JSON string: one call where walking its Scala map and sequences took a call for every
    property, a third of a new table's JVM calls. Kept by the metadata's hash, which Delta's case
    class computes over every field in the JVM: a raw pool's properties hold every topic's types,
    and bringing that text across at each commit cost more than the rest of the commit's calls.
    """
    metadata = txn.metadata()
    key = int(metadata.hashCode())
    text = _METADATA_CACHE.get(key)
    if text is None:
        text = str(metadata.json())
        if len(_METADATA_CACHE) > 64:
            _METADATA_CACHE.clear()
        _METADATA_CACHE[key] = text
    return json.loads(text)


def create_empty(spark: SparkSession, location: str, schema_json: str, configuration: Mapping[str, str], *,
                 user_metadata: str) -> None:
    """Create an empty Delta table at `location`: version 0, what CREATE TABLE commits (its metadata and
    protocol), with `user_metadata` in its commitInfo. Session defaults for new tables' properties
    apply, as to any create; `configuration` holds the table's own. Fails with
    TableExistsAtLocationError, or Delta's own error, if another writer created the table first.
    """
    with _active_session(spark), session_conf(spark, {**NEW_TABLE_SETTINGS, USER_METADATA_SETTING: user_metadata}):
        txn = delta_log(spark, location).startTransaction()
        if int(txn.readVersion()) != -1:
            raise TableExistsAtLocationError(f"a Delta table is at {location} already")
        action = java_class(spark, "org.apache.spark.sql.delta.actions.Action")
        metadata = action.fromJson(json.dumps({"metaData": {
            "id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}}, "schemaString": schema_json,
            "partitionColumns": [], "configuration": dict(configuration), "createdTime": int(time.time() * 1000)}}))
        txn.updateMetadataForNewTable(metadata)
        option = java_class(spark, "scala.Option")
        operation = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations").CreateTable(
            txn.metadata(), True, False, option.empty())  # managed, not as select
        txn.commit(java_class(spark, "org.apache.spark.api.python.PythonUtils").toSeq([]), operation)


def _write_metrics(spark: SparkSession, txn, adds: list[dict]) -> None:
    """The operationMetrics Delta's own write records (files, rows, bytes), so the table's history and
    ingest's checks read a commit the same whichever side wrote its files."""
    metrics = java_class(spark, "org.apache.spark.sql.execution.metric.SQLMetrics")
    values = {"numFiles": len(adds), "numOutputBytes": sum(int(add["size"]) for add in adds),
              "numOutputRows": sum(int(json.loads(add["stats"])["numRecords"]) for add in adds)}
    registered = {}
    for name, value in values.items():
        metric = metrics.createMetric(java_context(spark).sc(), name)
        metric.set(value)
        registered[name] = metric
    txn.registerSQLMetrics(java_session(spark),
                           java_class(spark, "org.apache.spark.api.python.PythonUtils").toScalaMap(registered))


@contextmanager
def _active_session(spark: SparkSession) -> Iterator[None]:
    """Delta's jobs ask for the active session (per JVM thread): the one whose settings this write set,
    for the write only, as Spark's own commands do; the thread's next caller gets its own back."""
    sessions = java_class(spark, "org.apache.spark.sql.SparkSession")
    previous = sessions.getActiveSession()
    sessions.setActiveSession(java_session(spark))
    try:
        yield
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()


def _start(spark: SparkSession, location: str, seen_version: int):
    """The table's log and a transaction that read all of it, refused if the table is older than seen."""
    log = delta_log(spark, location)
    txn = log.startTransaction()
    read_version = int(txn.readVersion())
    if read_version < seen_version:
        raise TableReplacedError(f"the table at {location} is at version {read_version}, "
                                 f"below version {seen_version} that this ingest saw")
    txn.readWholeTable()
    return log, txn


def _commit(spark: SparkSession, txn, actions, app_id: str, txn_version: int, user_metadata: str) -> int:
    """Commit `actions` as an append (Delta's WRITE operation) with the SetTransaction and userMetadata."""
    option = java_class(spark, "scala.Option")
    none = option.empty()
    txn.updateSetTransaction(app_id, txn_version, option.apply(int(time.time() * 1000)))
    append = java_class(spark, "org.apache.spark.sql.SaveMode").Append
    no_partitions = java_class(spark, "org.apache.spark.api.python.PythonUtils").toSeq([])
    operation = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations").Write(
        append, option.apply(no_partitions), none, option.apply(user_metadata))
    return int(txn.commit(actions, operation))
