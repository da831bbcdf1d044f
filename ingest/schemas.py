"""Which key and value types a topic's raw table takes, as writer schemas arrive.

One `SchemaTracker` per topic, used by both readers: the consumer asks it about
each new writer schema id as messages come (`accept`); Spark's reader asks it,
before a batch, for every writer schema the batch may meet (`candidates`) and
tells it which ones the batch took (`took`). Either way a new writer schema
evolves the table's types by `ingest.evolution.merge` (Kafka Connect's
auto.evolve), or is refused as incompatible. After a commit the tracker
records beside the table what spark-avro drops from the writer schemas
(`note`): their Kafka Connect names and the defaults of fields some writers lack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import types as T

from ingest.evolution import Change, IncompatibleSchemaError, merge
from ingest.table import RawTable
from zync.avro_types import connect_names, field_defaults, field_paths, spark_type, within_spark_decimals
from zync.errors import ZyncError
from zync.wire import DecodeError, Registry

PARTS = ("key", "value")


class IncompatibleChangeError(ZyncError):
    """A message's writer schema cannot evolve its table."""


@dataclass(frozen=True)
class WriterType:
    """One writer schema a batch may meet: its id, its Avro JSON and the Spark type spark-avro gives it."""

    schema_id: int
    avro: Any
    spark_type: T.DataType


class WriterSchemas:
    """Writer schemas by registry id, with their Spark types (each asked of spark-avro once)."""

    def __init__(self, spark, registry: Registry):
        self.spark = spark
        self.registry = registry
        self._types: dict[int, T.DataType] = {}
        self._avro: dict[int, Any] = {}  # ids never change their schema: narrowed once each

    def avro(self, schema_id: int) -> Any:
        """The writer schema as ingest reads it: decimals narrowed to what Spark holds
        (within_spark_decimals); DecodeError if the registry does not know the id."""
        found = self._avro.get(schema_id)
        if found is None:
            found = self._avro[schema_id] = within_spark_decimals(self.registry.schema(schema_id).schema)
        return found

    def spark_type(self, schema_id: int) -> T.DataType:
        found = self._types.get(schema_id)
        if found is None:
            found = self._types[schema_id] = spark_type(self.avro(schema_id), self.spark)
        return found

    def writer(self, schema_id: int) -> WriterType:
        return WriterType(schema_id, self.avro(schema_id), self.spark_type(schema_id))

    def subject_ids(self, subject: str) -> list[int]:
        """The schema ids of a subject's versions, in version order ([] if there is no such subject)."""
        client = self.registry.client
        try:
            versions = client.get_versions(subject)
        except Exception:  # noqa: BLE001 - no such subject: no versions
            return []
        return [client.get_version(subject, version).schema_id for version in versions]

    def latest_type(self, subject: str) -> T.DataType | None:
        """The Spark type of a subject's latest schema, or None if the registry has no such subject."""
        try:
            latest = self.registry.client.get_latest_version(subject)
        except Exception:  # noqa: BLE001 - any registry answer but a schema means "unknown"
            return None
        return spark_type(within_spark_decimals(json.loads(latest.schema.schema_str)), self.spark)


@dataclass
class SchemaTracker:
    """One topic's table key/value types and the writer schemas they have taken.

    `shaped`: a shaper writes the table's columns, so the types here stay Avro's (the batch's,
    before shaping) and are not read from the table or noted beside it.
    """

    topic: str
    schemas: WriterSchemas
    table: RawTable
    shaped: bool = False
    types: dict[str, T.DataType | None] = field(default_factory=lambda: {"key": None, "value": None})
    accepted: dict[str, set[int]] = field(default_factory=lambda: {"key": set(), "value": set()})
    last: dict[str, int | None] = field(default_factory=lambda: {"key": None, "value": None})
    changes: list[Change] = field(default_factory=list)  # what the next commit must do to the table

    def resume(self, key_type: T.DataType, value_type: T.DataType, key_id: int | None, value_id: int | None) -> None:
        """Start from the table as it is: its column types and the writer schemas of its last rows."""
        if not self.shaped:
            self.types = {"key": key_type, "value": value_type}
        self.last = {"key": key_id, "value": value_id}

    # --- the consumer: one message at a time ---------------------------------

    def accept(self, part: str, schema_id: int | None, where: str, offset: int, partition: int) -> None:
        """Check a writer schema the first time it shows up; evolve the part's type or refuse
        (IncompatibleChangeError; DecodeError if the registry does not know the id)."""
        if schema_id is None or schema_id in self.accepted[part]:
            return
        new_type = self.schemas.spark_type(schema_id)
        current = self.types[part]
        if current is None or isinstance(current, T.NullType):
            merged = new_type
        else:
            try:
                merged, changes = merge(current, new_type, (part,))
            except IncompatibleSchemaError as e:
                raise self._incompatible(part, schema_id, current, where, offset, partition, e) from None
            self.changes += changes
        self.types[part] = merged
        self.accepted[part].add(schema_id)

    def saw(self, key_id: int | None, value_id: int | None) -> None:
        """A message was taken with these writer schemas (the last ones name the old side of a refusal)."""
        for part, schema_id in (("key", key_id), ("value", value_id)):
            if schema_id is not None:
                self.last[part] = schema_id

    def take_changes(self) -> list[Change]:
        changes, self.changes = self.changes, []
        return changes

    def _incompatible(self, part: str, schema_id: int, current: T.DataType, where: str, offset: int,
                      partition: int, e: IncompatibleSchemaError) -> IncompatibleChangeError:
        old_id = self.last[part]
        old = (f"writer schema id {old_id}: {json.dumps(self.schemas.avro(old_id))}"
               if old_id is not None else f"the table's column type {current.simpleString()}")
        new = json.dumps(self.schemas.avro(schema_id))
        return IncompatibleChangeError(
            f"{where}: the {part} schema changed incompatibly for table {self.table.label}: {e}.\n"
            f"    old: {old}\n    new: writer schema id {schema_id}: {new}\n"
            f"Everything before offset {offset} of partition {partition} is committed, nothing from it on. "
            "Make the change compatible (add optional fields, widen types) and produce again, or ingest this "
            "topic into a new table (--table NAME)."
        )

    # --- Spark's reader: a whole batch at once -------------------------------

    def candidates(self, part: str) -> tuple[list[WriterType], T.DataType | None, list[Change]]:
        """The writer schemas a batch may meet in `part`, the column type that holds them all, and the
        table changes that type needs.

        The candidates are the ids already taken and the versions of the topic's subject
        (TopicNameStrategy), in version order, as long as each evolves the type compatibly: a
        version that does not is left out, so its messages fail the Spark job and the consumer
        finds the first of them. A version registered but not yet produced evolves the table too.
        """
        ids = sorted(self.accepted[part])
        ids += [found for found in self.schemas.subject_ids(f"{self.topic}-{part}") if found not in ids]
        current = self.types[part]
        writers, changes = [], []
        for schema_id in ids:
            writer = self.schemas.writer(schema_id)
            if current is None or isinstance(current, T.NullType):
                merged = writer.spark_type
            else:
                try:
                    merged, more = merge(current, writer.spark_type, (part,))
                except IncompatibleSchemaError:
                    break
                changes += more
            current = merged
            writers.append(writer)
        return writers, current, changes

    def took(self, part: str, writers: list[WriterType], column_type: T.DataType) -> None:
        """A Spark batch with these writer schemas is committed, its column of this type."""
        if not self.shaped:
            self.types[part] = column_type
        self.accepted[part].update(w.schema_id for w in writers)

    # --- both ------------------------------------------------------------------

    def column_type(self, part: str, current: T.DataType | None = None) -> T.DataType:
        """The part's column type; for a table first created from tombstones only (no writer schema yet),
        the type of the subject's latest schema."""
        found = current if current is not None else self.types[part]
        if found is not None:
            return found
        latest = self.schemas.latest_type(f"{self.topic}-{part}")
        if latest is None:
            raise ZyncError(f"cannot create the table of {self.topic}: its first records are tombstones and the "
                            f"registry has no subject {self.topic}-{part} to type the `{part}` column")
        return latest

    def note(self, with_next_append: bool = False) -> None:
        """Record beside the table what its writer schemas say of its fields (after a commit, or with
        the next Python append's commit): their Connect schema names, and the defaults of fields that
        some of the table's writers lack.

        The table's writer ids are kept only once a writer has defaults (Debezium's all do), so a
        table of plain schemas stays at one commit per batch."""
        if self.shaped:
            return  # a shaper's columns are its own
        schemas: dict[str, dict[int, dict]] = {"key": {}, "value": {}}

        def schemas_of(part: str, schema_ids) -> None:
            for schema_id in sorted(set(schema_ids) - set(schemas[part])):
                try:
                    schemas[part][schema_id] = self.schemas.avro(schema_id)
                except DecodeError:
                    pass  # deleted from the registry since: nothing to learn from it

        for part in PARTS:
            schemas_of(part, self.accepted[part])
        names = {f"{part}.{path}" if path else part: name
                 for part in PARTS for schema in schemas[part].values()
                 for path, name in connect_names(schema).items()}
        ids = None
        if any(field_defaults(schema) for part in schemas.values() for schema in part.values()):
            ids = self.table.writer_schema_ids()
            for part in PARTS:
                ids[part] |= self.accepted[part]
                schemas_of(part, ids[part])
        defaults: dict[str, dict] = {}
        for part, by_id in schemas.items() if ids is not None else ():
            fields = {schema_id: field_paths(schema) for schema_id, schema in by_id.items()}
            for schema_id, schema in sorted(by_id.items()):  # in id order: the newest writer's default wins
                for path, default in field_defaults(schema).items():
                    lacking = sorted(i for i, paths in fields.items() if path not in paths)
                    if lacking:
                        defaults[f"{part}.{path}"] = {"default": default, "absentIn": lacking}
        self.table.note_writer_schemas(ids, names, defaults, with_next_append)
