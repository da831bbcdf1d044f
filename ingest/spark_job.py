"""The Spark job of one batch: read its offsets from Kafka (spark-sql-kafka), decode them with from_avro.

Why: on two cores, zync's Python consumer reading, parsing and shipping a
million messages to Spark took a core's worth of time from Spark's decode and
write (bench/ingest_throughput.py: 1.5x slower than Structured Streaming).
Spark reading the same offsets is the anchor's own engine, minus its
streaming offset log.

What stays zync's: ingest picks each batch's offsets before the job
(`plan`: from the next offset to the high-water mark per partition, capped by
the batch size), the batch is one idempotent Delta commit, and the resume
point is still the table's own offsets. What a Spark job cannot do is stop
*at* a bad message: it fails whole. So every message it cannot take (a writer
schema id it was not given, a payload that is not wire format, corrupt Avro)
fails the job through `raise_error` or from_avro's FAILFAST, and ingest runs
that range through the Python consumer, which commits up to the message and
stops with its coordinates (ingest/fallback.py tells these failures apart).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.avro.functions import from_avro

from ingest.evolution import conform
from ingest.schemas import WriterType
from ingest.table import write_partitions
from zync.envelope import kafka_column
from zync.wire import BODY_POSITION, HEADER, header

# The message raise_error gives a payload the job was not told how to decode; ingest/fallback.py
# recognises it (and from_avro's own failures) as "a message to find", not as a broken reader.
UNDECODABLE = "zync: a message this batch cannot decode"


def plan(positions: Mapping[int, int], low: Mapping[int, int], high: Mapping[int, int],
         budget: int) -> dict[int, tuple[int, int]]:
    """[start, end) per partition with messages to read, at most `budget` messages in all.

    The budget is shared out like water filling: partitions with little lag take all of
    it, the rest split what remains evenly, so one busy partition cannot starve another.
    A position before the low-water mark (retention deleted those messages) starts at it.
    """
    start = {p: max(positions.get(p, low[p]), low[p]) for p in high}
    lag = {p: high[p] - start[p] for p in high if high[p] > start[p]}
    take: dict[int, int] = {}
    left, waiting = budget, sorted(lag, key=lambda p: (lag[p], p))
    while waiting and left > 0:
        share = max(1, left // len(waiting))
        p = waiting.pop(0)
        take[p] = min(lag[p], share)
        left -= take[p]
    return {p: (start[p], start[p] + n) for p, n in sorted(take.items()) if n > 0}


def kafka_batch(spark, options: Mapping[str, str], topic: str, ranges: Mapping[int, tuple[int, int]],
                key_writers: list[WriterType], value_writers: list[WriterType]):
    """The planned offsets as Spark's Kafka source reads them: kafka envelope, raw key and value bytes."""
    reader = (spark.read.format("kafka").options(**options)
              .option("assign", json.dumps({topic: sorted(ranges)}))
              .option("startingOffsets", json.dumps({topic: {str(p): s for p, (s, _) in ranges.items()}}))
              .option("endingOffsets", json.dumps({topic: {str(p): e for p, (_, e) in ranges.items()}}))
              # Gaps in offsets (transaction markers, compaction) are not lost data.
              .option("failOnDataLoss", "false")
              .option("minPartitions", str(write_partitions(spark, sum(e - s for s, e in ranges.values())))))
    raw = reader.load()
    return raw.select(
        kafka_column(
            topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"),
            timestamp=F.when(F.unix_millis(F.col("timestamp")) > 0, F.col("timestamp")),
            key_schema_id=schema_id(F.col("key"), key_writers),
            value_schema_id=schema_id(F.col("value"), value_writers),
        ),
        F.col("key").alias("k"), F.col("value").alias("v"))


def _header(payload: Column) -> Column:
    return F.substring(payload, 1, HEADER.size)


def _has_header(payload: Column, writer: WriterType) -> Column:
    """Whether the payload starts with the wire-format header naming this writer schema.

    Five bytes compared as bytes: parsing the id out of every header (hex, then base
    conversion) costs a measurable share of a million-message batch.
    """
    return _header(payload) == F.lit(bytearray(header(writer.schema_id)))


def schema_id(payload: Column, writers: list[WriterType]) -> Column:
    """The writer schema id of the payload's header, among the batch's writers (else null)."""
    if not writers:
        return F.lit(None).cast("int")
    first, *others = writers
    found = F.when(_has_header(payload, first), F.lit(first.schema_id))
    for writer in others:
        found = found.when(_has_header(payload, writer), F.lit(writer.schema_id))
    return found


def decoded(payload: Column, writers: list[WriterType], target: T.DataType, part: str) -> Column:
    """The payload decoded with its writer schema and conformed to the table's type.

    One branch per writer schema the batch was given; anything else (another id, no
    wire-format header) fails the job with UNDECODABLE rather than becoming a null.
    """
    branches = F.when(payload.isNull(), F.lit(None).cast(target))
    for writer in writers:
        body = from_avro(F.substring(payload, BODY_POSITION, 2**31 - 1), json.dumps(writer.avro), {"mode": "FAILFAST"})
        branches = branches.when(_has_header(payload, writer), conform(body, writer.spark_type, target))
    return branches.otherwise(F.raise_error(F.lit(f"{UNDECODABLE} ({part})")).cast(target))


def decode_batch(raw, key_writers: list[WriterType], value_writers: list[WriterType],
                 key_type: T.DataType, value_type: T.DataType):
    """kafka, key, value of the table's types."""
    return raw.select("kafka", decoded(F.col("k"), key_writers, key_type, "key").alias("key"),
                      decoded(F.col("v"), value_writers, value_type, "value").alias("value"))
