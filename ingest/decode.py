"""Kafka messages of one batch -> a Spark DataFrame (kafka, key, value), decoded with their writer schemas.

Two decoders, both legitimate (bench/ingest_throughput.py measures them):
- "jvm" (default, the faster): the raw bytes go to Spark as Arrow and Spark's
  own `from_avro` decodes them, so the types are spark-avro's by construction;
- "python": fastavro decodes, `value_converter` shapes each datum, and
  `createDataFrame` builds the rows.
Either way the frame is reshaped to the table's key/value types (`conform`),
and a message that does not decode is reported with its coordinates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from ingest.arrow_frame import frame_from_arrow
from ingest.evolution import conform
from ingest.table import row_schema
from zync.avro_types import spark_type, value_converter
from zync.wire import DecodeError, Registry

DECODERS = ("jvm", "python")
MIN_PARTITION_ROWS = 10_000  # below this, one more Spark task costs more than it saves

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


@dataclass(frozen=True)
class PreparedBatch:
    """A batch's message indexes per (key, value) writer schema ids, and its raw Arrow batches (jvm)."""

    groups: dict[tuple[int | None, int | None], list[int]]
    arrow: list[pa.RecordBatch] | None


class BatchDecodeError(DecodeError):
    """Message number `index` of the batch does not decode; the ones before it did."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index


class Decoder:
    def __init__(self, spark, registry: Registry, kind: str = "jvm"):
        if kind not in DECODERS:
            raise ValueError(f"decoder is one of {DECODERS}")
        self.spark = spark
        self.registry = registry
        self.kind = kind
        self._converters: dict[int, Any] = {}
        self._types: dict[int, T.DataType] = {}

    def spark_type(self, schema_id: int) -> T.DataType:
        found = self._types.get(schema_id)
        if found is None:
            found = self._types[schema_id] = spark_type(self.registry.schema(schema_id).schema)
        return found

    def prepare(self, messages: Sequence[Message]) -> PreparedBatch:
        """The pure-Python half of a batch's frame, done by the consuming thread.

        The writer thread then holds the GIL only for Py4J calls, so the two
        threads do not take turns on it while Spark writes the previous batch.
        """
        groups: dict[tuple[int | None, int | None], list[int]] = {}
        for i, m in enumerate(messages):
            groups.setdefault((m.key_schema_id, m.value_schema_id), []).append(i)
        return PreparedBatch(groups, self._arrow(messages) if self.kind == "jvm" else None)

    def frame(self, messages: Sequence[Message], key_type: T.DataType, value_type: T.DataType,
              prepared: PreparedBatch | None = None):
        """The batch as kafka/key/value columns of the given (table) types."""
        prepared = prepared or self.prepare(messages)
        groups = prepared.groups
        if self.kind == "python":
            frames = [self._python(messages, idx, ids, key_type, value_type) for ids, idx in groups.items()]
        else:
            base = self._raw(prepared.arrow)
            frames = [self._jvm(base, ids, len(groups) > 1, key_type, value_type) for ids in groups]
        result = frames[0]
        for other in frames[1:]:
            result = result.unionByName(other)
        return result

    # --- python --------------------------------------------------------------

    def _convert(self, schema_id: int | None, data: bytes | None, where: str, index: int) -> Any:
        if schema_id is None:
            return None
        try:
            _, datum = self.registry.decode(data, where, record_names=True)
        except DecodeError as e:
            raise BatchDecodeError(index, str(e)) from None
        convert = self._converters.get(schema_id)
        if convert is None:
            convert = self._converters[schema_id] = value_converter(self.registry.schema(schema_id).schema)
        return convert(datum)

    def _python(self, messages: Sequence[Message], indexes: list[int], ids: tuple[int | None, int | None],
                key_type: T.DataType, value_type: T.DataType):
        from pyspark.sql import functions as F

        rows = []
        for i in indexes:
            m = messages[i]
            rows.append(((m.topic, m.partition, m.offset, kafka_timestamp(m.timestamp_ms), m.key_schema_id,
                          m.value_schema_id),
                         self._convert(m.key_schema_id, m.key, m.where + " key", i),
                         self._convert(m.value_schema_id, m.value, m.where + " value", i)))
        source_key = self.spark_type(ids[0]) if ids[0] is not None else key_type
        source_value = self.spark_type(ids[1]) if ids[1] is not None else value_type
        frame = self.spark.createDataFrame(rows, row_schema(source_key, source_value), verifySchema=False)
        return frame.select("kafka", conform(F.col("key"), source_key, key_type).alias("key"),
                            conform(F.col("value"), source_value, value_type).alias("value"))

    # --- jvm -----------------------------------------------------------------

    def _arrow(self, messages: Sequence[Message]) -> list[pa.RecordBatch]:
        # One Arrow batch (= one partition, one write task, one file) per core.
        parts = max(1, min(self.spark.sparkContext.defaultParallelism, len(messages) // MIN_PARTITION_ROWS))
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
        from pyspark.sql import functions as F

        raw = frame_from_arrow(self.spark, batches, RAW_SCHEMA)
        return raw.select(
            F.struct(
                F.col("topic"), F.col("partition"), F.col("offset"),
                F.when(F.col("ts") > 0, F.timestamp_millis(F.col("ts"))).alias("timestamp"),
                F.col("kid").alias("key_schema_id"), F.col("vid").alias("value_schema_id"),
            ).alias("kafka"), "kid", "vid", "k", "v")

    def _jvm(self, base, ids: tuple[int | None, int | None], several: bool,
             key_type: T.DataType, value_type: T.DataType):
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        frame = base
        if several:
            frame = frame.where(F.col("kid").eqNullSafe(F.lit(ids[0]).cast("int"))
                                & F.col("vid").eqNullSafe(F.lit(ids[1]).cast("int")))

        def column(schema_id: int | None, raw: str, target: T.DataType):
            if schema_id is None:
                return F.lit(None).cast(target)
            text = json.dumps(self.registry.schema(schema_id).schema)
            decoded = from_avro(F.expr(f"substring({raw}, 6)"), text, {"mode": "FAILFAST"})
            return conform(decoded, self.spark_type(schema_id), target)

        return frame.select("kafka", column(ids[0], "k", key_type).alias("key"),
                            column(ids[1], "v", value_type).alias("value"))

    def locate_error(self, messages: Sequence[Message]) -> BatchDecodeError | None:
        """After Spark failed to decode a batch: the first message fastavro cannot decode either."""
        for i, m in enumerate(messages):
            try:
                self._convert(m.key_schema_id, m.key, m.where + " key", i)
                self._convert(m.value_schema_id, m.value, m.where + " value", i)
            except BatchDecodeError as e:
                return e
        return None


def kafka_timestamp(ms: int):
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc) if ms and ms > 0 else None
