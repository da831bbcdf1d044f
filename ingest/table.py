"""The raw Delta table of one topic: envelope, resume point, evolution, and the one-commit append.

Exactly once rests on two things Delta gives:
- the batch and its Kafka offsets land in ONE commit, and the resume point is
  the table's own largest offset per partition, so a crash at any moment
  resumes with nothing lost and nothing repeated;
- every commit records an idempotent-write version (txnAppId = "zync-from-kafka",
  txnVersion = the previous one + 1) and checks, before and after, that no other
  ingest committed since the version this one last saw. An append to an existing
  table also declares that it read the whole table (ingest/delta_append.py), so
  of two ingests racing for it Delta fails the later commit
  (ConcurrentAppendException); the first append, which creates the table, is an
  idempotent Delta write, and of two creators Delta lets one win; a first batch
  written in Python follows ingest's create of the empty table, version 0
  (RawTable.create), which Delta lets one creator write. Each loser stops
  with an error instead of a duplicate.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest import data_file
from ingest.data_file import NotDecodable
from ingest.catalog_entry import register
from ingest.delta_append import (CONCURRENT_MODIFICATION, TableExistsAtLocationError,
                                 TableMetadata, TableReplacedError, USER_METADATA_SETTING,
                                 append_files_reading_whole_table,
                                 append_reading_whole_table, create_empty)
from ingest.evolution import Change, conform
from ingest.spark_errors import caused_by
from zync.delta_metadata import (commit_actions, commit_texts, default_location, first_commit_info, is_delta_table,
                                 latest_transaction, table_location)
from zync.envelope import check_envelope, kafka_struct
from zync import storage
from zync.errors import ZyncError
from zync.spark import session_conf

TXN_APP_ID = "zync-from-kafka"
TABLE_EXISTS = "org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException"
NO_DATABASE = "org.apache.spark.sql.catalyst.analysis.NoSuchDatabaseException"
# A commit file another writer wrote first (a table's version 0, when two ingests create it at once).
FILE_EXISTS = "java.nio.file.FileAlreadyExistsException"
# Delta keeps min/max statistics on these columns only. Readers prune raw tables by
# kafka.* (the ETL cursor, mirrors) and perhaps by key; by default Delta would also
# compute statistics on the first 32 leaf fields, mostly a Debezium `before` image no
# one filters on, and that costs about a third of an ingest batch's write.
STATS_COLUMNS = ("kafka", "key")
# And Debezium's source commit time, when the records carry it: `zync run` reads each ingested file's
# oldest and newest from the Delta log to tell how fresh its tables are (service/freshness.py).
SOURCE_TIME_COLUMN = ("value", "source", "ts_ms")
_STATS_DEFAULT = "spark.databricks.delta.properties.defaults.dataSkippingStatsColumns"
# Delta writes a checkpoint of a table's log in every commit whose version is a multiple of this
# (its default: 10). A raw table that `zync run` appends to every cycle then pays ~1 s every tenth
# commit, and tables created together pay it in the same cycle: that cycle's ingest took 1.0-1.6 s a
# table against ~0.3 s (bench/ingest_cycle.py). Every 100th commit instead; a reader of the table then
# replays up to 99 small commit files after the checkpoint, which the same benchmark's reads did not
# show (50 commits past one read no slower than 10).
RAW_CHECKPOINT_INTERVAL = 100
_CHECKPOINT_DEFAULT = "spark.databricks.delta.properties.defaults.checkpointInterval"
CHECKPOINT_INTERVAL_PROPERTY = "delta.checkpointInterval"
# How the raw table's Parquet files are encoded, set for its writes only (session settings: Delta
# passes a writer's own options to Parquet for the codec alone). Dictionary encoding of the many
# columns of a Debezium record was about half of Parquet's share of a batch; zstd then makes the
# files smaller than snappy with dictionaries made them.
# 1,000,000 events warm (bench/ingest_warm.py): 5.5-7.0 s against 7.3-9.6 s, 11 MB against 27 MB,
# and a full scan of the table no slower.
MIN_PARTITION_ROWS = 10_000  # below this, one more Spark task (and file) costs more than it saves


def write_partitions(spark, records: int) -> int:
    """The Spark partitions, so the files, a batch of `records` is written as: one per core at most.

    A small batch is one file: the tables a service appends to every few
    seconds would otherwise gain a file per core and per writer-schema group
    each time, and every run reading them lists and opens each one.
    """
    return max(1, min(spark.sparkContext.defaultParallelism, records // MIN_PARTITION_ROWS))


PARQUET_SETTINGS = {"spark.sql.parquet.compression.codec": data_file.COMPRESSION,
                    "parquet.enable.dictionary": str(data_file.DICTIONARY).lower()}
# The Kafka Connect schema names of the table's fields ({"value.after.due": "io.debezium.time.Date"}),
# as JSON: spark-avro drops them, and macros/debezium/ reads them to type Debezium's semantic values.
CONNECT_NAMES_PROPERTY = "zync.connectNames"
# Every writer schema id the table's rows were written with ({"key": [...], "value": [...]}).
WRITER_SCHEMAS_PROPERTY = "zync.writerSchemaIds"
# Defaults of fields that some writer schemas lack ({"value.after.qty": {"default": 0, "absentIn": [3]}}):
# a record written without the field reads as holding the default (Avro's schema resolution); the
# raw table keeps the null it was written as, and macros/debezium/zync_with_default.sql puts it in.
FIELD_DEFAULTS_PROPERTY = "zync.fieldDefaults"


# How many times an append is tried again after conflicting with commits that only rewrote files.
REWRITE_RETRIES = 3
# What Delta throws when an idempotent write's txnVersion was committed by another writer meanwhile.
CONCURRENT_TRANSACTION = "org.apache.spark.sql.delta.ConcurrentTransactionException"


class ConcurrentIngestError(ZyncError):
    """Another process committed to the table this ingest writes."""


@dataclass
class ResumeState:
    """What a restart needs, read from one table version."""

    offsets: dict[int, int]  # partition -> next offset
    txn_version: int  # the last idempotent-write version of TXN_APP_ID (-1: none yet)
    key_type: T.DataType
    value_type: T.DataType
    key_schema_id: int | None = None  # the writer schemas of the last row (for error messages)
    value_schema_id: int | None = None


def _has_field(schema: T.StructType, path: tuple[str, ...]) -> bool:
    """Whether `schema` has the nested field `path` (through structs only)."""
    for name in path:
        if not isinstance(schema, T.StructType) or name not in schema.names:
            return False
        schema = schema[name].dataType
    return True


def _by_ingest(commit_info: dict[str, Any]) -> bool:
    """Whether a commit is an ingest's (the marker it writes as the commit's userMetadata)."""
    return str(commit_info.get("userMetadata") or "").startswith(f"{TXN_APP_ID} run ")


def _stats_columns(schema: T.StructType) -> str:
    """A new raw table's statistics columns (delta.dataSkippingStatsColumns), for its schema."""
    source_time = [".".join(SOURCE_TIME_COLUMN)] if _has_field(schema, SOURCE_TIME_COLUMN) else []
    return ",".join([c for c in STATS_COLUMNS if c in schema.names] + source_time)


def as_nullable(data_type: T.DataType) -> T.DataType:
    """The type with every field, array element and map value nullable (Spark's DataType.asNullable)."""
    if isinstance(data_type, T.StructType):
        return T.StructType([T.StructField(f.name, as_nullable(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(as_nullable(data_type.elementType), True)
    if isinstance(data_type, T.MapType):
        return T.MapType(as_nullable(data_type.keyType), as_nullable(data_type.valueType), True)
    return data_type


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql_text(text: str) -> str:
    """`text` as the inside of a quoted Spark SQL string literal."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


@dataclass(frozen=True)
class _Committed:
    """An append's commit as its transaction made it: the version it read, the one it made, its rows."""

    read_version: int
    version: int
    rows: int


def _output_rows(commit_info) -> int | None:
    metrics = commit_info.operationMetrics()
    if not metrics.isDefined():
        return None
    found = metrics.get().get("numOutputRows")
    return int(found.get()) if found.isDefined() else None


class RawTable:
    """A raw table by catalog name (`db`.`table`) or by location (a Delta path, no catalog entry)."""

    def __init__(self, spark, name: str | None = None, location: str | None = None):
        if (name is None) == (location is None):
            raise ValueError("a raw table has a name or a location")
        self.spark = spark
        self.name = name
        self.location = location
        self.run_id = uuid.uuid4().hex
        self._txn_version = -1
        self._location_of_name: str | None = None
        self._seen_version = -1  # the table version up to which this ingest has checked the log
        self._exists = False
        # This ingest created the table: every row in it is one this ingest appended, and no zync note is set yet.
        self._created_here = False
        self.check_seconds = 0.0  # the last commit's conflict checks (reported, to show their cost)
        self.last_rows: int | None = None  # rows of the last commit (Delta's numOutputRows), if known
        self._properties: dict[str, str] | None = None  # the table's properties, once read
        self._notes_for_next_append: dict[str, str] = {}  # properties append_rows' commit sets (note_writer_schemas)
        self.declined: str | None = None  # why the last append_rows did not append, if it did not

    @property
    def label(self) -> str:
        return self.name if self.name else f"delta.`{self.location}`"

    @property
    def sql_name(self) -> str:
        if self.name:
            return ".".join(_quote(p) for p in self.name.split("."))
        return f"delta.{_quote(self.location)}"

    def _path(self) -> str:
        if self.location:
            return self.location
        if self._location_of_name is None:  # a Spark job: asked once
            self._location_of_name = table_location(self.spark, self.sql_name)
        return self._location_of_name

    def exists(self) -> bool:
        if not self._exists:
            if self.name:
                self._exists = bool(self.spark.catalog.tableExists(self.name))
                if not self._exists:
                    self._exists = self._adopt_orphan()
            else:
                self._exists = is_delta_table(self.spark, self.location)
        return self._exists

    def schema(self) -> T.StructType:
        return self.spark.table(self.sql_name).schema

    def _session_conf(self, settings: dict[str, str]) -> AbstractContextManager[None]:
        return session_conf(self.spark, settings)

    def _save(self, writer) -> None:
        """Write the raw table (by name or location), its Parquet files encoded as PARQUET_SETTINGS says."""
        with self._session_conf(PARQUET_SETTINGS):
            if self.name:
                writer.saveAsTable(self.name)
            else:
                writer.save(self.location)

    def _creating(self, schema: T.StructType, marker: str) -> AbstractContextManager[None]:
        """What a first append sets for the table it creates, through session defaults.

        The stats columns and the checkpoint interval become the new table's properties; and a by-name create (CREATE
        TABLE AS SELECT) ignores the writer's userMetadata option, but not the session's.
        """
        return self._session_conf({
            _STATS_DEFAULT: _stats_columns(schema),
            _CHECKPOINT_DEFAULT: str(RAW_CHECKPOINT_INTERVAL),
            USER_METADATA_SETTING: marker,
        })

    # --- resume point -------------------------------------------------------

    def resume(self, topic: str) -> ResumeState:
        """Next offsets, txn version and column types, all from one table version."""
        schema = self.schema()
        check_envelope(schema, self.label)
        version, self._txn_version = latest_transaction(self.spark, self._path(), TXN_APP_ID)
        self._seen_version = version
        rows = self.spark.sql(
            f"select kafka.partition as p, max(kafka.offset) as o, "
            f"max_by(kafka.key_schema_id, kafka.offset) as k, max_by(kafka.value_schema_id, kafka.offset) as v "
            f"from {self.sql_name} version as of {version} "
            f"where kafka.topic = :topic group by kafka.partition",
            args={"topic": topic},
        ).collect()
        last_key = next((r["k"] for r in rows if r["k"] is not None), None)
        last_value = next((r["v"] for r in rows if r["v"] is not None), None)
        return ResumeState({r["p"]: r["o"] + 1 for r in rows}, self._txn_version,
                           schema["key"].dataType, schema["value"].dataType, last_key, last_value)

    def resume_pool(self) -> dict[tuple[str, int], int]:
        """A raw pool's next offsets per (topic, partition) and its txn version, from one table version."""
        check_envelope(self.schema(), self.label)
        version, self._txn_version = latest_transaction(self.spark, self._path(), TXN_APP_ID)
        self._seen_version = version
        rows = self.spark.sql(
            f"select kafka.topic as t, kafka.partition as p, max(kafka.offset) as o "
            f"from {self.sql_name} version as of {version} group by kafka.topic, kafka.partition").collect()
        return {(r["t"], r["p"]): r["o"] + 1 for r in rows}

    @property
    def read_version(self) -> int:
        """The table version the last resume read (and checks from)."""
        return self._seen_version

    def newest_tag(self, tag: str, version: int, chunk: int = 20) -> str | None:
        """The value of `tag` on the newest `add` action that has it, in the commits up to `version` (None: none).

        Read from the commit files newest first, a few at a time: a raw pool's commits each carry it, so
        the newest one or two have it unless compactions came after."""
        end = int(version)
        while end >= 0:
            start = max(0, end - chunk + 1)
            for _, texts in sorted(commit_texts(self.spark, self._path(), start, end), reverse=True):
                for text in reversed(texts):
                    add = json.loads(text).get("add")
                    if add and tag in (add.get("tags") or {}):
                        return add["tags"][tag]
            end = start - 1
        return None

    def stored_property(self, name: str, empty: Any) -> Any:
        """A JSON table property as this ingest last read or wrote it (`empty` if none)."""
        return self._stored(name, empty)

    def note_with_next_append(self, properties: dict[str, str]) -> None:
        """Table properties the next append_rows commit sets, with its rows."""
        self._notes_for_next_append.update(properties)

    # --- evolution ----------------------------------------------------------

    def evolve(self, changes: list[Change], key: T.DataType, value: T.DataType) -> None:
        """Take the table to the merged key/value types: DDL for new or optional fields, a rewrite to widen."""
        if any(c.kind == "widen" for c in changes):
            # Delta 3.3 cannot widen int -> bigint in place (type widening does
            # byte/short -> int only), so the rows are rewritten in one commit.
            current = self.schema()
            frame = self.spark.table(self.sql_name)
            frame = frame.select(
                F.col("kafka"),
                conform(F.col("key"), current["key"].dataType, key).alias("key"),
                conform(F.col("value"), current["value"].dataType, value).alias("value"),
                *[F.col(c) for c in current.names if c not in ("kafka", "key", "value")],
            )
            writer = frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
            self._save(writer)
            return
        for change in changes:
            path = ".".join(_quote(p) for p in change.path)
            if change.kind == "nullable":
                self.spark.sql(f"alter table {self.sql_name} alter column {path} drop not null")
        # Added fields arrive with the append (mergeSchema), in the same commit as their first rows.

    # --- Kafka Connect schema names ----------------------------------------

    def _stored(self, name: str, empty: Any) -> Any:
        """A JSON table property as stored (read once per ingest; this ingest is its only writer); none
        before the table is created (its first commit sets what is noted for it)."""
        if self._properties is None:
            if not self.exists():
                return empty
            rows = self.spark.sql(f"show tblproperties {self.sql_name}").collect()
            self._properties = {r["key"]: r["value"] for r in rows}
        stored = self._properties.get(name)
        return json.loads(stored) if stored else empty

    def writer_schema_ids(self) -> dict[str, set[int]]:
        """The writer schema ids of the table's key and value columns: as stored, or, for a table an
        earlier version of zync wrote (no WRITER_SCHEMAS_PROPERTY yet), read from its rows once."""
        stored = self._stored(WRITER_SCHEMAS_PROPERTY, None)
        if stored is not None:
            return {part: set(stored.get(part, [])) for part in ("key", "value")}
        ids: dict[str, set[int]] = {"key": set(), "value": set()}
        # A table this ingest created holds only its own appends, whose writers the caller adds: no scan
        # (a Spark job, once half of a new table's first commit in a whole database's bootstrap).
        if self.exists() and not self._created_here:
            for row in self.spark.sql(f"select distinct kafka.key_schema_id as key, kafka.value_schema_id as value "
                                      f"from {self.sql_name}").collect():
                for part in ids:
                    if row[part] is not None:
                        ids[part].add(row[part])
        return ids

    def note_writer_schemas(self, ids: dict[str, set[int]] | None, connect_names: dict[str, str],
                            field_defaults: dict[str, dict], with_next_append: bool = False) -> None:
        """Keep what the table's writer schemas say beside it: their ids (WRITER_SCHEMAS_PROPERTY), the
        Connect schema names of its fields (CONNECT_NAMES_PROPERTY) and the defaults of fields some
        writers lack (FIELD_DEFAULTS_PROPERTY); ids None (no writer
        of this run has defaults) leaves the stored ids and defaults as they are.

        Set by the next append_rows' own commit if `with_next_append` (if that append declines, the
        note after the batch's commit makes it); otherwise a commit of its own (no rows: the resume
        point and the conflict checks, which look for ingest transactions, ignore it), made only
        when something changed: a new writer schema. Ids and names are never dropped, as the table
        never drops a field.
        """
        wanted: dict[str, Any] = {CONNECT_NAMES_PROPERTY: {**self._stored(CONNECT_NAMES_PROPERTY, {}), **connect_names}}
        if ids is not None:  # the defaults are worked out over every writer id, so they go with them
            wanted[WRITER_SCHEMAS_PROPERTY] = {part: sorted(ids[part]) for part in ("key", "value")}
            wanted[FIELD_DEFAULTS_PROPERTY] = field_defaults
        changed = {k: json.dumps(v, sort_keys=True) for k, v in wanted.items() if v != self._stored(k, {})}
        if with_next_append:
            self._notes_for_next_append = changed
            return
        if not changed:
            return
        assignments = ", ".join(f"'{k}' = '{_sql_text(t)}'" for k, t in changed.items())
        self.spark.sql(f"alter table {self.sql_name} set tblproperties ({assignments})")
        self._properties.update(changed)

    # --- the one-commit append ---------------------------------------------

    def append(self, frame, where: str) -> None:
        """Append one batch as one idempotent Delta commit, or fail if another ingest wrote meanwhile.

        The first append creates the table (envelope first, as the frame has it): one Spark
        job and one commit, where an empty create before the first batch took ~12 s in a
        fresh JVM (bench/ingest_throughput.py).
        """
        creating = not self.exists()

        def commit(version: int, marker: str, seen: int) -> bool:
            if creating:
                writer = (frame.write.format("delta").mode("append").option("mergeSchema", "true")
                          .option("txnAppId", TXN_APP_ID).option("txnVersion", version).option("userMetadata", marker))
                with self._creating(frame.schema, marker):
                    self._save(writer)
            else:
                with self._session_conf(PARQUET_SETTINGS):
                    append_reading_whole_table(self.spark, self._path(), frame, app_id=TXN_APP_ID, txn_version=version,
                                               user_metadata=marker, seen_version=seen)
            return True

        self._append(where, creating, commit)

    def create(self, key_type: T.DataType, value_type: T.DataType, where: str,
               checkpoint_interval: int = RAW_CHECKPOINT_INTERVAL) -> bool:
        """Create the table by name with no rows, as the first append would (columns, properties), for a
        first batch written in Python: Delta's first commit, then the catalog entry, no Spark job. False
        (nothing done, `declined` says why) for a table given by location, which the first append
        creates, or a folder holding files of another write.

        The columns are the ones a first append's DataFrame has (the envelope, then the batch's key and
        value types), all nullable as Delta makes a table created from a DataFrame. The commit is
        ingest's own (create_empty) and the catalog entry one call after it (ingest/catalog_entry.py):
        through the catalog, Delta's CREATE TABLE took ~0.3 s a table on a warm engine, most of a
        database's bootstrap. The create holds no transaction: the first batch's own commit is the
        resume point, and a crash after the create leaves an empty table to resume from, entered in
        the catalog by exists() if the crash came before the catalog call.
        """
        self.declined = None
        if not self.name:
            self.declined = "the table is given by location"
            return False
        schema = as_nullable(T.StructType([T.StructField("kafka", kafka_struct()), T.StructField("key", key_type),
                                           T.StructField("value", value_type)]))
        self._create_database()
        location = self._default_location()
        first = first_commit_info(location)
        if first is not None and _by_ingest(first):  # made since this ingest found no table
            raise self._conflict(where, "it created the table first")
        if first is not None:
            # A Delta table no catalog entry names, not an ingest's: Spark's first append reports it.
            self.declined = "the table's folder holds a Delta table that no ingest created"
            return False
        if storage.location(location).has_any():
            # Files of an earlier write that failed before its commit: a first append through Spark
            # writes beside them, as it always has.
            self.declined = "the table's folder holds files of a failed write"
            return False
        configuration = {data_file.STATS_COLUMNS_PROPERTY: _stats_columns(schema),
                         CHECKPOINT_INTERVAL_PROPERTY: str(checkpoint_interval)}
        try:
            create_empty(self.spark, location, schema.json(), configuration,
                         user_metadata=f"{TXN_APP_ID} run {self.run_id} create")
            register(self.spark, self.sql_name, location)
        except TableExistsAtLocationError:
            raise self._conflict(where, "it created the table first") from None
        except Exception as e:  # noqa: BLE001 - Py4J wraps Delta's and the catalog's exceptions
            if caused_by(e, CONCURRENT_MODIFICATION) or caused_by(e, FILE_EXISTS) or caused_by(e, TABLE_EXISTS):
                raise self._conflict(where, "it created the table first") from None
            raise
        self._exists = self._created_here = True
        self._properties = {}  # the create set Delta's properties, none of zync's notes
        return True

    def _default_location(self) -> str:
        """Where the catalog puts this table when it is created (asked once: a catalog call)."""
        if self._location_of_name is None:
            self._location_of_name = default_location(self.spark, self.sql_name)
        return self._location_of_name

    def _adopt_orphan(self) -> bool:
        """Enter in the catalog a table an ingest created, but that a crash kept out of it (create, as
        Delta's own CREATE TABLE, commits before the catalog call). Its commits, if any, are the resume
        point, so no row is read twice. Whether it did."""
        try:
            location = self._default_location()
        except Exception as e:  # noqa: BLE001 - Py4J wraps the catalog's exception
            if caused_by(e, NO_DATABASE):
                return False
            raise
        info = first_commit_info(location)
        if info is None or not _by_ingest(info):
            return False
        try:
            register(self.spark, self.sql_name, location)
        except Exception as e:  # noqa: BLE001 - Py4J wraps the catalog's exception
            if not caused_by(e, TABLE_EXISTS):  # another ingest entered it meanwhile: it is there all the same
                raise
        return True

    def _create_database(self) -> None:
        """The named table's database, made if missing (a first write into a new schema)."""
        if self._location_of_name is not None:  # the catalog placed the table in it: it is there
            return
        self.spark.sql(f"create database if not exists {_quote(self.name.split('.')[0])}")

    def append_rows(self, rows_for: Callable[[T.StructType], pa.Table], where: str,
                    tags: dict[str, str] | None = None) -> bool:
        """Append one batch's rows, built in Python for the table's schema, as append() does; False (nothing
        written) where the table cannot take them so: not created yet, not on this machine's file system, a
        table Delta's own write would treat otherwise (data_file.not_writable), or `rows_for` raising
        NotDecodable (`declined` then says why). `tags`: the file's `add` action's tags.

        Its file is written while the commit's transaction is open, for the schema that transaction
        read, so a schema changed meanwhile cannot go unseen. A file whose commit fails stays
        unnamed by the log (invisible, removed by VACUUM) rather than deleted: a failure after
        Delta wrote the commit must not take a committed file away.
        """
        self.declined = None
        notes, self._notes_for_next_append = self._notes_for_next_append, {}
        if not self.exists():
            self.declined = "the table is not created yet"
            return False
        folder = storage.location(self._path())

        written: dict[tuple[str, str], list[dict]] = {}
        committing: list[list[dict]] = []  # the files the newest transaction took

        def files(metadata: TableMetadata) -> list[dict] | None:
            # Tried again after a compaction's commit (_commit_past_rewrites): the file written for the
            # same schema stands, where writing another would leave the first one unnamed.
            read = (metadata.schema_json, json.dumps(metadata.configuration, sort_keys=True))
            if read in written:
                committing.append(written[read])
                return written[read]
            self.declined = data_file.not_writable(metadata.schema_json, metadata.configuration,
                                                   metadata.partition_columns)
            if self.declined:
                return None
            schema = T.StructType.fromJson(json.loads(metadata.schema_json))
            try:
                rows = rows_for(schema)
            except NotDecodable as e:
                self.declined = str(e)
                return None
            add = data_file.write(rows, folder, schema, data_file.stats_columns(metadata.configuration),
                                  self.spark.version)
            written[read] = [{**add, "tags": dict(tags)} if tags else add]
            committing.append(written[read])
            return written[read]

        def commit(version: int, marker: str, seen: int) -> _Committed | None:
            read: list[int] = []

            def check(read_version: int) -> None:
                self._no_ingest_since(where, seen, read_version)
                read.append(read_version)

            made = append_files_reading_whole_table(self.spark, self._path(), files, app_id=TXN_APP_ID,
                                                    txn_version=version, user_metadata=marker,
                                                    seen_version=seen, properties=notes, read=check)
            if made is None:
                return None
            rows = sum(int(json.loads(add["stats"])["numRecords"]) for add in committing[-1])
            return _Committed(read[-1], made, rows)

        appended = self._append(where, False, commit, checks_read=True)
        if appended and notes:
            self._properties.update(notes)
        return appended

    def _append(self, where: str, creating: bool, commit: Callable[[int, str, int], bool | _Committed | None],
                checks_read: bool = False) -> bool:
        """The checks around every append: no other ingest's commit since the one this ingest saw, before
        and after; `commit(txn version, marker, seen version)` writes, or answers False (None) for nothing
        done. `checks_read`: the commit checks the commits up to the version its transaction read itself
        (_no_ingest_since) and answers what it read and made (_Committed), so that no log listing is
        needed around it."""
        started = time.monotonic()
        seen = self._seen_version
        if creating:
            if self.name:
                self._create_database()
        elif not checks_read:
            # Only the commits since the last one this ingest saw are read (JSON files, no Spark job).
            seen, others, _ = self._commits_since(seen, None)
            if others:
                raise self._conflict(where, f"it made commit {others[0]} since this one started")
        version = self._txn_version + 1
        marker = f"{TXN_APP_ID} run {self.run_id} txn {version}"
        self.check_seconds = time.monotonic() - started
        try:
            made = self._commit_past_rewrites(commit, version, marker, seen)
            if not made:
                return False
        except TableReplacedError as e:
            raise ZyncError(f"table {self.label} was dropped or replaced while this ingest wrote it ({e}); "
                            "nothing of this batch was committed. Run the ingest again: it starts over from "
                            "what the table holds now.") from None
        except Exception as e:  # noqa: BLE001 - Py4J wraps Delta's exception
            if caused_by(e, CONCURRENT_TRANSACTION):
                raise self._conflict(where, "it committed the same batch number first") from None
            if caused_by(e, CONCURRENT_MODIFICATION):
                raise self._conflict(where, "it committed to the table while this batch was written") from None
            if creating and self._created_meanwhile():
                raise self._conflict(where, "it created the table first") from None
            raise
        self._exists = True
        self._created_here = self._created_here or creating
        started = time.monotonic()
        if isinstance(made, _Committed) and made.version == made.read_version + 1:
            # Checked up to the version read, and Delta's conflict check let no commit in after it.
            latest, others, mine = made.version, [], made.version
            self.last_rows = made.rows
        else:
            latest, others, mine = self._commits_since(made.read_version if isinstance(made, _Committed) else seen,
                                                       marker)
        if mine is None or (others and others[0] < mine):
            # Delta skips an idempotent write whose txnVersion is already in the table.
            raise self._conflict(where, f"it committed batch number {version} first; this one was skipped")
        self._seen_version, self._txn_version = latest, version
        self.check_seconds += time.monotonic() - started
        return True

    def _commit_past_rewrites(self, commit: Callable[[int, str, int], bool | _Committed | None], version: int,
                              marker: str, seen: int) -> bool | _Committed | None:
        """commit(...), again after a conflict with commits that only rewrote files (a compaction).

        Delta fails this append when any commit since its snapshot removed a file, since the append
        declares it read the whole table; a compaction's commit removes files and changes no row, so
        it is no other writer, and `zync run` compacts a raw pool beside its ingest (service/run.py).
        Any other commit meanwhile (another ingest's, a metadata change, a delete) still stops it.
        """
        for attempt in range(REWRITE_RETRIES + 1):
            try:
                return commit(version, marker, seen)
            except Exception as e:  # noqa: BLE001 - Py4J wraps Delta's exception
                if attempt == REWRITE_RETRIES or not caused_by(e, CONCURRENT_MODIFICATION):
                    raise
                latest = self._only_rewrites_since(seen)
                if latest is None:
                    raise
                seen = latest
        raise AssertionError("unreachable")

    def _only_rewrites_since(self, version: int) -> int | None:
        """The latest version, if every commit after `version` only rewrote files (dataChange=false
        removes and adds, no transaction, metadata or protocol); else None."""
        latest = None
        for latest, actions in commit_actions(self.spark, self._path(), int(version) + 1):
            for action in actions:
                kind = action.getClass().getSimpleName()
                if kind in ("AddFile", "RemoveFile"):
                    if action.dataChange():
                        return None
                elif kind != "CommitInfo":
                    return None
        return latest

    def _no_ingest_since(self, where: str, seen: int, read_version: int) -> None:
        """Raise the conflict if another ingest committed after version `seen`, up to `read_version`.

        The commits are read by name (they are in the log the transaction just listed): usually there
        are none, the version read being this ingest's last commit."""
        if read_version <= seen:
            return
        for version, texts in commit_texts(self.spark, self._path(), seen + 1, read_version):
            if any(text.startswith('{"txn"') and json.loads(text)["txn"].get("appId") == TXN_APP_ID
                   for text in texts):
                raise self._conflict(where, f"it made commit {version} since this one started")

    def _created_meanwhile(self) -> bool:
        """After a failed first write: did another ingest create the table (so the failure is the race)?"""
        self._exists = False
        try:
            return self.exists() and self._commits_since(-1, None)[1] != []
        except Exception:  # noqa: BLE001 - a half-created table is not evidence of a race
            return False

    def _commits_since(self, version: int, marker: str | None) -> tuple[int, list[int], int | None]:
        """(latest version, versions of other ingests' commits, version of the commit with `marker`)
        among the commits after `version`."""
        latest, others, mine = version, [], None
        for latest, actions in commit_actions(self.spark, self._path(), int(version) + 1):
            txn, meta, info = False, None, None
            for action in actions:
                kind = action.getClass().getSimpleName()
                if kind == "SetTransaction" and action.appId() == TXN_APP_ID:
                    txn = True
                elif kind == "CommitInfo" and action.userMetadata().isDefined():
                    meta, info = action.userMetadata().get(), action
            if marker is not None and meta == marker:
                mine = latest
                self.last_rows = _output_rows(info)
            elif txn:
                others.append(latest)
        return latest, others, mine

    def _conflict(self, where: str, detail: str) -> ConcurrentIngestError:
        return ConcurrentIngestError(
            f"another ingest is writing table {self.label} ({detail}); this one stopped before committing "
            f"{where}, so nothing is duplicated. Run one `zync from-kafka` per table; once the other stops, "
            "run this again: it resumes from the table's offsets."
        )
