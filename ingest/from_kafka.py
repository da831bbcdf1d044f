"""The ingest loop: consume, decode Avro, append one Delta commit per batch.

The resume point is the table itself: the largest offset per topic-partition
in the raw table. A batch and its offsets land in one Delta commit, so a
crash at any moment resumes with nothing lost and nothing repeated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from zync import kafka_client
from zync.avro_types import spark_type, value_converter
from zync.config import Target
from zync.errors import ZyncError
from zync.progress import Progress
from zync.spark import spark_session
from zync.tables import check_envelope, qualified, raw_table_name
from zync.wire import Registry

DEFAULT_BATCH_SIZE = 50_000


@dataclass
class TopicBatch:
    """Decoded rows of one topic waiting for their commit, all under one writer schema pair."""

    topic: str
    table: str
    schema_ids: tuple[int | None, int | None] = (None, None)
    rows: list[tuple] = field(default_factory=list)


def _kafka_struct():
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

    return StructType([
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("timestamp", TimestampType(), True),
        StructField("key_schema_id", IntegerType(), True),
        StructField("value_schema_id", IntegerType(), True),
    ])


def _row_schema(registry: Registry, schema_ids: tuple[int | None, int | None], existing):
    from pyspark.sql.types import StringType, StructField, StructType

    def column(name: str, schema_id: int | None) -> StructField:
        if schema_id is None:
            # Only nulls so far (a run starting with tombstones): keep the table's
            # type, or a placeholder the first real schema will replace.
            known = existing.get(name) if existing else None
            return StructField(name, known if known is not None else StringType(), True)
        return StructField(name, spark_type(registry.schema(schema_id).schema), True)

    return StructType([StructField("kafka", _kafka_struct(), False),
                       column("key", schema_ids[0]), column("value", schema_ids[1])])


class Ingest:
    def __init__(self, target: Target, topics: list[str], table: str | None = None,
                 shaper: Path | None = None, batch_size: int = DEFAULT_BATCH_SIZE):
        if table and len(topics) > 1:
            raise ZyncError("--table names the table of a single topic; with several topics each gets raw_<topic>")
        self.target = target
        self.topics = topics
        self.tables = {t: qualified(target, table or raw_table_name(t)) for t in topics}
        self.shaper_sql = shaper.read_text() if shaper else None
        self.batch_size = batch_size
        self.registry = Registry(target.schema_registry)
        self.spark = spark_session(target)
        self._converters: dict[int, Any] = {}
        self.commits = 0

    def resume_offsets(self, topic: str) -> dict[int, int]:
        """Next offset per partition: one past the largest in the table."""
        table = self.tables[topic]
        if not self.spark.catalog.tableExists(table.replace("`", "")):
            return {}
        check_envelope(self.spark, table)
        rows = self.spark.sql(
            f"select kafka.partition as p, max(kafka.offset) as o from {table} "
            f"where kafka.topic = :topic group by kafka.partition", args={"topic": topic}
        ).collect()
        return {r["p"]: r["o"] + 1 for r in rows}

    def _convert(self, schema_id: int | None, datum: Any) -> Any:
        if schema_id is None or datum is None:
            return None
        convert = self._converters.get(schema_id)
        if convert is None:
            convert = self._converters[schema_id] = value_converter(self.registry.schema(schema_id).schema)
        return convert(datum)

    def commit(self, batch: TopicBatch) -> None:
        if not batch.rows:
            return
        name = batch.table.replace("`", "")
        existing = ({f.name: f.dataType for f in self.spark.table(name).schema.fields}
                    if None in batch.schema_ids and self.spark.catalog.tableExists(name) else None)
        schema = _row_schema(self.registry, batch.schema_ids, existing)
        frame = self.spark.createDataFrame(batch.rows, schema)
        if self.shaper_sql:
            frame.createOrReplaceTempView("batch")
            frame = self.spark.sql(self.shaper_sql)
            if "kafka" not in frame.columns:
                raise ZyncError("the shaper dropped the `kafka` column: it must keep it as it is")
        db = batch.table.split(".")[0]
        self.spark.sql(f"create database if not exists {db}")
        (frame.write.format("delta").mode("append").option("mergeSchema", "true")
         .saveAsTable(batch.table.replace("`", "")))
        self.commits += 1
        batch.rows = []

    def run(self, exit_after: float | None = None) -> int:
        consumer = kafka_client.consumer(self.target, group=f"zync-ingest-{'-'.join(self.topics)}")
        assignment = []
        for topic in self.topics:
            resume = self.resume_offsets(topic)
            for p in kafka_client.partitions(self.target, topic):
                assignment.append(TopicPartition(topic, p, resume.get(p, OFFSET_BEGINNING)))
        consumer.assign(assignment)
        batches = {t: TopicBatch(t, self.tables[t]) for t in self.topics}
        progress = Progress("from-kafka")
        total, last_message = 0, time.monotonic()
        try:
            while True:
                messages = consumer.consume(num_messages=self.batch_size, timeout=0.5)
                if not messages:
                    for batch in batches.values():
                        self.commit(batch)
                    if exit_after is not None and time.monotonic() - last_message >= exit_after:
                        break
                    continue
                last_message = time.monotonic()
                for msg in messages:
                    if msg.error():
                        if msg.error().code() == KafkaError._PARTITION_EOF:
                            continue
                        raise ZyncError(f"consuming {msg.topic()}: {msg.error()}")
                    batch = batches[msg.topic()]
                    where = f"{msg.topic()}[{msg.partition()}]@{msg.offset()}"
                    key_id, key = self.registry.decode(msg.key(), where + " key")
                    value_id, value = self.registry.decode(msg.value(), where + " value")
                    ids = (key_id if key_id is not None else batch.schema_ids[0],
                           value_id if value_id is not None else batch.schema_ids[1])
                    if batch.rows and ids != batch.schema_ids:
                        # A new writer schema: commit what was read under the old one first.
                        self.commit(batch)
                    batch.schema_ids = ids
                    _, ts = msg.timestamp()
                    batch.rows.append((
                        (msg.topic(), msg.partition(), msg.offset(),
                         _timestamp(ts), key_id, value_id),
                        self._convert(key_id, key), self._convert(value_id, value),
                    ))
                    total += 1
                    if len(batch.rows) >= self.batch_size:
                        self.commit(batch)
                progress.update(total)
        finally:
            consumer.close()
        tables = ", ".join(sorted(set(self.tables.values())))
        progress.finish(f"{total:,} records into {tables} ({self.commits} commits)")
        return total


def _timestamp(ms: int):
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc) if ms and ms > 0 else None
