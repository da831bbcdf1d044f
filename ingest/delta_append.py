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
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from zync.spark_internals import delta_log, java_class, java_frame, java_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# What Delta throws when a commit meets a concurrent one it conflicts with.
CONCURRENT_MODIFICATION = "io.delta.exceptions.DeltaConcurrentModificationException"


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
    sessions = java_class(spark, "org.apache.spark.sql.SparkSession")
    # Delta's jobs ask for the active session (per JVM thread): the one whose settings this write set,
    # for the write only, as Spark's own commands do; the thread's next caller gets its own back.
    previous = sessions.getActiveSession()
    sessions.setActiveSession(java_session(spark))
    try:
        return _commit(spark, location, frame, app_id, txn_version, user_metadata, seen_version)
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()


def _commit(spark: SparkSession, location: str, frame: DataFrame, app_id: str, txn_version: int,
            user_metadata: str, seen_version: int) -> int:
    session = java_session(spark)
    scala = java_class(spark, "org.apache.spark.api.python.PythonUtils")
    option = java_class(spark, "scala.Option")
    none = option.empty()
    log = delta_log(spark, location)
    txn = log.startTransaction()
    read_version = int(txn.readVersion())
    if read_version < seen_version:
        raise TableReplacedError(f"the table at {location} is at version {read_version}, "
                                 f"below version {seen_version} that this ingest saw")
    txn.readWholeTable()
    append = java_class(spark, "org.apache.spark.sql.SaveMode").Append
    options = java_class(spark, "org.apache.spark.sql.delta.DeltaOptions")(
        scala.toScalaMap({"mergeSchema": "true", "userMetadata": user_metadata}), session.sessionState().conf())
    no_partitions = scala.toSeq([])
    write = java_class(spark, "org.apache.spark.sql.delta.commands.WriteIntoDelta")(
        log, append, options, no_partitions, scala.toScalaMap({}), java_frame(frame), none, none)
    actions = write.write(txn, session, none, False)
    txn.updateSetTransaction(app_id, txn_version, option.apply(int(time.time() * 1000)))
    operation = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations").Write(
        append, option.apply(no_partitions), none, option.apply(user_metadata))
    return int(txn.commit(actions, operation))
