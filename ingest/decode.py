"""Messages the consumer read -> a Spark DataFrame (kafka, key, value), decoded in the JVM by spark-avro.

The raw bytes go to Spark as Arrow and Spark's own `from_avro` decodes them with
each message's writer schema, so the values are spark-avro's, as on Spark's
reader; each writer's columns are then reshaped to the table's key/value types
(`conform`). A batch Spark cannot decode is searched with fastavro, message by
message, for the first that does not decode (`locate_error`), so ingest can stop
at its coordinates or dead-letter it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.avro.functions import from_avro

from ingest.arrow_frame import frame_from_arrow
from ingest.evolution import conform
from ingest.schemas import WriterSchemas
from ingest.table import write_partitions
from zync.envelope import kafka_column
from zync.wire import BODY_POSITION, DecodeError, Registry, schema_id_of

# The batch as it crosses to Spark: the payloads still Avro, decoded there by from_avro.
RAW_SCHEMA = T.StructType([
    T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()), T.StructField("ts", T.LongType()),
    T.StructField("kid", T.IntegerType()), T.StructField("vid", T.IntegerType()),
    T.StructField("k", T.BinaryType()), T.StructField("v", T.BinaryType()),
])
RAW_ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("ts", pa.int64()),
    ("kid", pa.int32()), ("vid", pa.int32()), ("k", pa.binary()), ("v", pa.binary()),
])


@dataclass(frozen=True)
class Message:
    """One Kafka message with its wire-format schema ids (parsed from the headers on arrival)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    key_schema_id: int | None
    value_schema_id: int | None
    headers: tuple[tuple[str, bytes | None], ...] | None = None  # kept for a dead letter

    @property
    def where(self) -> str:
        return f"topic {self.topic} partition {self.partition} offset {self.offset}"

    @classmethod
    def of(cls, msg, keep_headers: bool) -> Message:
        """A consumed message; DecodeError if a payload is not in the wire format."""
        where = f"topic {msg.topic()} partition {msg.partition()} offset {msg.offset()}"
        key, value = msg.key(), msg.value()
        return cls(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1], key, value,
                   schema_id_of(key, where + " key"), schema_id_of(value, where + " value"),
                   _headers(msg, keep_headers))

    @classmethod
    def as_read(cls, msg, keep_headers: bool) -> Message:
        """A message that cannot be taken, as it arrived: the schema ids its headers give, if any."""
        ids = []
        for part, data in (("key", msg.key()), ("value", msg.value())):
            try:
                ids.append(schema_id_of(data, part))
            except DecodeError:
                ids.append(None)
        return cls(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1], msg.key(), msg.value(),
                   ids[0], ids[1], _headers(msg, keep_headers))


def _headers(msg, keep: bool) -> tuple[tuple[str, bytes | None], ...] | None:
    """A message's headers, kept only where a dead letter may need them (errors.tolerance all)."""
    headers = msg.headers() if keep else None
    return tuple(headers) if headers else None


@dataclass(frozen=True)
class PreparedBatch:
    """A batch's message indexes per (key, value) writer schema ids, and its raw Arrow batches."""

    groups: dict[tuple[int | None, int | None], list[int]]
    arrow: list[pa.RecordBatch]


class BatchDecodeError(DecodeError):
    """Message number `index` of the batch does not decode; the ones before it did."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index


class Decoder:
    def __init__(self, spark, registry: Registry, schemas: WriterSchemas):
        self.spark = spark
        self.registry = registry
        self.schemas = schemas

    def prepare(self, messages: Sequence[Message]) -> PreparedBatch:
        """The pure-Python half of a batch's frame, done by the consuming thread.

        The writer thread then holds the GIL only for Py4J calls, so the two
        threads do not take turns on it while Spark writes the previous batch.
        """
        groups: dict[tuple[int | None, int | None], list[int]] = {}
        for i, m in enumerate(messages):
            groups.setdefault((m.key_schema_id, m.value_schema_id), []).append(i)
        return PreparedBatch(groups, self._arrow(messages))

    def frame(self, messages: Sequence[Message], key_type: T.DataType, value_type: T.DataType,
              prepared: PreparedBatch | None = None):
        """The batch as kafka/key/value columns of the given (table) types."""
        prepared = prepared or self.prepare(messages)
        base = self._raw(prepared.arrow)
        several = len(prepared.groups) > 1
        frames = [self._decoded(base, ids, several, key_type, value_type) for ids in prepared.groups]
        result = frames[0]
        for other in frames[1:]:
            result = result.unionByName(other)
        # Each writer-schema group spans every partition: a union writes as many files again.
        return result.coalesce(len(prepared.arrow)) if several else result

    def _arrow(self, messages: Sequence[Message]) -> list[pa.RecordBatch]:
        # One Arrow batch (= one partition, one write task, one file) per core.
        parts = write_partitions(self.spark, len(messages))
        step = -(-len(messages) // parts)
        batches = []
        for start in range(0, len(messages), step):
            chunk = messages[start:start + step]
            batches.append(pa.RecordBatch.from_arrays([
                pa.array([m.topic for m in chunk], pa.string()),
                pa.array([m.partition for m in chunk], pa.int32()),
                pa.array([m.offset for m in chunk], pa.int64()),
                pa.array([m.timestamp_ms for m in chunk], pa.int64()),
                pa.array([m.key_schema_id for m in chunk], pa.int32()),
                pa.array([m.value_schema_id for m in chunk], pa.int32()),
                pa.array([m.key for m in chunk], pa.binary()),
                pa.array([m.value for m in chunk], pa.binary()),
            ], schema=RAW_ARROW_SCHEMA))
        return batches

    def _raw(self, batches: list[pa.RecordBatch]):
        raw = frame_from_arrow(self.spark, batches, RAW_SCHEMA)
        return raw.select(
            kafka_column(
                topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"),
                timestamp=F.when(F.col("ts") > 0, F.timestamp_millis(F.col("ts"))),
                key_schema_id=F.col("kid"), value_schema_id=F.col("vid"),
            ), "kid", "vid", "k", "v")

    def _decoded(self, base, ids: tuple[int | None, int | None], several: bool,
                 key_type: T.DataType, value_type: T.DataType):
        frame = base
        if several:
            frame = frame.where(F.col("kid").eqNullSafe(F.lit(ids[0]).cast("int"))
                                & F.col("vid").eqNullSafe(F.lit(ids[1]).cast("int")))

        def column(schema_id: int | None, raw: str, target: T.DataType):
            if schema_id is None:
                return F.lit(None).cast(target)
            text = json.dumps(self.schemas.avro(schema_id))
            decoded = from_avro(F.expr(f"substring({raw}, {BODY_POSITION})"), text, {"mode": "FAILFAST"})
            return conform(decoded, self.schemas.spark_type(schema_id), target)

        return frame.select("kafka", column(ids[0], "k", key_type).alias("key"),
                            column(ids[1], "v", value_type).alias("value"))

    def locate_error(self, messages: Sequence[Message]) -> BatchDecodeError | None:
        """After Spark failed to decode a batch: the first message fastavro cannot decode either."""
        for i, m in enumerate(messages):
            for schema_id, data, part in ((m.key_schema_id, m.key, "key"), (m.value_schema_id, m.value, "value")):
                if schema_id is None:
                    continue
                try:
                    self.registry.decode(data, f"{m.where} {part}")
                except DecodeError as e:
                    return BatchDecodeError(i, str(e))
        return None


def kafka_timestamp(ms: int) -> dt.datetime | None:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc) if ms and ms > 0 else None
