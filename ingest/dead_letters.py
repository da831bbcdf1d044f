"""The dead-letter table of a raw table (errors.tolerance: all, as in Kafka Connect).

A message ingest cannot take (not Avro in the wire format, an unknown schema id,
a body that does not decode, a schema that cannot evolve the table) lands in
`<raw table>__dead_letters` with its coordinates (the raw table's own `kafka`
struct), its key and value bytes, its headers, the error and the time.

Exactly once without a two-table commit: Delta commits one table at a time, so
a batch's dead letters are committed to this table *before* the batch's rows
go to the raw table, and the resume point stays the raw table's largest offset
per partition. A kill between the two commits leaves dead letters past the
resume point; a restart reads those coordinates first (`known`) and skips
them wherever they come up again (the consumer does not take them, Spark's
batch filters them out), so each message ends in exactly one of the tables
even if its schema was registered meanwhile. The other order (raw first) would
lose the dead letter to a kill between the commits, and a resume point of the
larger of both tables' offsets would lose the raw rows before it.

Appends go through RawTable.append: the same idempotent Delta writes, so a
second ingest of the same topic is detected here as it is on the raw table.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.decode import Message, kafka_timestamp
from ingest.table import RawTable
from zync.envelope import kafka_struct
from zync.errors import ZyncError
from zync.ingest_options import TOLERANCES
from zync.spark_internals import delta_tables, java_column, java_session
from zync.tables import DEAD_LETTERS_SUFFIX


def check_tolerance(value: str, where: str) -> str:
    if value not in TOLERANCES:
        raise ZyncError(f"{where}: errors.tolerance is one of {', '.join(TOLERANCES)}, not {value!r}")
    return value


def dead_letter_schema() -> T.StructType:
    return T.StructType([
        T.StructField("kafka", kafka_struct(), False),
        T.StructField("key", T.BinaryType(), True),
        T.StructField("value", T.BinaryType(), True),
        T.StructField("headers", T.ArrayType(T.StructType([
            T.StructField("key", T.StringType(), False), T.StructField("value", T.BinaryType(), True)])), True),
        T.StructField("error", T.StringType(), False),
        T.StructField("dead_lettered_at", T.TimestampType(), False),
    ])


@dataclass(frozen=True)
class DeadLetter:
    """One message ingest could not take, as it arrived, and why."""

    message: Message  # schema ids None where the header could not be read
    error: str

    def row(self, at: dt.datetime) -> tuple:
        m = self.message
        return ((m.topic, m.partition, m.offset, kafka_timestamp(m.timestamp_ms), m.key_schema_id, m.value_schema_id),
                m.key, m.value, [(k, v) for k, v in m.headers] if m.headers is not None else None,
                self.error, at)


def stored_message(row) -> Message:
    """A dead-letter row back as the message it was (for a replay)."""
    kafka = row["kafka"]
    ts = kafka["timestamp"]
    return Message(kafka["topic"], kafka["partition"], kafka["offset"],
                   int(ts.timestamp() * 1000) if ts is not None else -1,
                   row["key"], row["value"], kafka["key_schema_id"], kafka["value_schema_id"],
                   tuple((h["key"], h["value"]) for h in row["headers"]) if row["headers"] is not None else None)


def coordinates(partition_offsets: dict[int, Iterable[int]]):
    """A Column: kafka.(partition, offset) among the given ones (an expression, no SQL text)."""
    found = F.lit(False)
    for p, offsets in sorted(partition_offsets.items()):
        offsets = sorted(offsets)
        if offsets:
            found = found | ((F.col("kafka.partition") == F.lit(p)) & F.col("kafka.offset").isin(offsets))
    return found


class DeadLetterTable:
    """`<raw table>__dead_letters`, beside the raw table (by name or by location)."""

    def __init__(self, spark, raw: RawTable):
        self.spark = spark
        self.table = (RawTable(spark, name=raw.name + DEAD_LETTERS_SUFFIX) if raw.name
                      else RawTable(spark, location=raw.location.rstrip("/") + DEAD_LETTERS_SUFFIX))

    @property
    def label(self) -> str:
        return self.table.label

    def exists(self) -> bool:
        return self.table.exists()

    def open(self, topic: str, raw_next: dict[int, int]) -> dict[int, set[int]]:
        """Read the table's write state (for its idempotent appends) and return the dead letters at or
        past the raw table's resume point: those a kill left between this table's commit and the raw
        table's, which the run must skip."""
        if not self.exists():
            return {}
        self.table.resume(topic)
        known: dict[int, set[int]] = {}
        for row in self.frame(topic).select("kafka.partition", "kafka.offset").collect():
            if row["offset"] >= raw_next.get(row["partition"], 0):
                known.setdefault(row["partition"], set()).add(row["offset"])
        return known

    def frame(self, topic: str):
        return self.spark.table(self.table.sql_name).where(F.col("kafka.topic") == F.lit(topic))

    def append(self, letters: Sequence[DeadLetter], where: str) -> None:
        at = dt.datetime.now(dt.timezone.utc)
        frame = self.spark.createDataFrame([d.row(at) for d in letters], dead_letter_schema(), verifySchema=False)
        self.table.append(frame, f"the dead letters of {where}")

    def remove(self, topic: str, partition_offsets: dict[int, Iterable[int]]) -> None:
        """Delete replayed dead letters (one Delta commit)."""
        delta = delta_tables(self.spark)
        session = java_session(self.spark)
        table = (delta.forName(session, self.table.name) if self.table.name
                 else delta.forPath(session, self.table.location))
        table.delete(java_column((F.col("kafka.topic") == F.lit(topic)) & coordinates(partition_offsets)))
