"""zync's egress algorithm: align the table's output offsets with the topic's.

Read the topic's high-water mark, then produce the out rows with
kafka.offset >= it, in order, with an idempotent producer and no transactions
(their markers would take offsets). Every delivery report must carry the
row's own offset; anything else means another writer, and egress stops.
A restart resumes exactly where Kafka stands.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from zync import kafka_client
from zync.avro_types import avro_schema_for_struct, row_to_datum
from zync.config import Target
from zync.errors import ZyncError
from zync.progress import Progress
from zync.spark import spark_session
from zync.tables import check_envelope, qualified
from zync.wire import Registry, WriterSchema, encode

FOLLOW_POLL_S = 2.0


class OffsetMismatchError(ZyncError):
    """Kafka assigned an offset other than the row's: another process writes to the topic."""


class Egress:
    def __init__(self, target: Target, table: str, topic: str | None = None, shaper: Path | None = None):
        self.target = target
        self.table = qualified(target, table)
        self.spark = spark_session(target)
        if not self.spark.catalog.tableExists(self.table.replace("`", "")):
            raise ZyncError(f"table {self.table} does not exist: run `dbt run` (or check --table)")
        check_envelope(self.spark, self.table)
        self.topic = topic or self._only_topic()
        self.shaper_sql = shaper.read_text() if shaper else None
        self.registry = Registry(target.schema_registry)
        self._writers: dict[tuple[str, tuple[str, ...] | None], tuple[WriterSchema, Any]] = {}

    @property
    def _has_kind(self) -> bool:
        return "kind" in self.spark.table(self.table.replace("`", "")).columns

    def _out_rows(self):
        frame = self.spark.table(self.table.replace("`", ""))
        if "kind" in frame.columns:
            frame = frame.where("kind = 'out'")
        return frame

    def _only_topic(self) -> str:
        topics = [r[0] for r in self._out_rows().select("kafka.topic").distinct().limit(2).collect()]
        if len(topics) > 1:
            raise ZyncError(f"table {self.table} holds rows for several topics: choose one with --topic")
        if not topics:
            raise ZyncError(f"table {self.table} has no out rows yet, so no topic: give --topic")
        return topics[0]

    def _writer(self, part: str, struct, fields: tuple[str, ...] | None) -> tuple[WriterSchema, Any]:
        cache_key = (part, fields)
        cached = self._writers.get(cache_key)
        if cached is None:
            safe = "".join(c if c.isalnum() else "_" for c in self.topic)
            only = list(fields) if fields is not None else None
            schema = avro_schema_for_struct(struct, name=f"{safe}_{part}", namespace="zync", only_fields=only)
            writer = self.registry.register(f"{self.topic}-{part}", schema)
            cached = self._writers[cache_key] = (writer, row_to_datum(struct, only_fields=only))
        return cached

    def publish_once(self, progress: Progress, published: int) -> int:
        """Produce every out row at or past the topic's high-water mark; return how many."""
        kafka_client.ensure_topic(self.target, self.topic)
        high = kafka_client.high_water_marks(self.target, self.topic).get(0, 0)
        out_only = "kind = 'out' and " if self._has_kind else ""
        frame = self.spark.sql(
            f"select * from {self.table} where {out_only}kafka.topic = :topic and kafka.offset >= :high "
            "order by kafka.offset",
            args={"topic": self.topic, "high": high},
        )
        if self.shaper_sql:
            frame.createOrReplaceTempView("batch")
            frame = self.spark.sql(self.shaper_sql)
        schema = {f.name: f.dataType for f in frame.schema.fields}
        has_fields = "fields" in schema
        producer = kafka_client.producer(self.target)
        mismatches: list[str] = []
        failures: list[str] = []

        def on_delivery(err, msg, expected: int) -> None:
            if err is not None:
                failures.append(str(err))
            elif msg.offset() != expected:
                mismatches.append(f"row offset {expected} was written at Kafka offset {msg.offset()}")

        expected, count = high, 0
        for row in frame.toLocalIterator(prefetchPartitions=True):
            offset = row["kafka"]["offset"]
            if offset != expected:
                raise ZyncError(
                    f"table {self.table} has no out row at offset {expected} of {self.topic} (next is {offset}): "
                    "the output offsets must be contiguous; the table is damaged or another writer touched the topic"
                )
            key_bytes = value_bytes = None
            if row["key"] is not None:
                writer, to_datum = self._writer("key", schema["key"], None)
                key_bytes = encode(writer, to_datum(row["key"]))
            if row["value"] is not None:
                fields = tuple(row["fields"]) if has_fields and row["fields"] is not None else None
                writer, to_datum = self._writer("value", schema["value"], fields)
                value_bytes = encode(writer, to_datum(row["value"]))
            producer.produce(self.topic, key=key_bytes, value=value_bytes, partition=0,
                             on_delivery=lambda err, msg, e=expected: on_delivery(err, msg, e))
            producer.poll(0)
            if mismatches:
                break
            expected += 1
            count += 1
            progress.update(published + count, f"-> {self.topic}@{expected}")
        producer.flush()
        if mismatches:
            raise OffsetMismatchError(
                f"{self.topic}: {mismatches[0]}. Another process is writing to this topic; stop it "
                f"(only one `zync to-kafka` per topic), then run again: egress resumes at the topic's high-water mark."
            )
        if failures:
            raise ZyncError(f"{len(failures)} records were not delivered to {self.topic}: {failures[0]}")
        return count

    def run(self, follow: bool = False) -> int:
        progress = Progress("to-kafka")
        published = self.publish_once(progress, 0)
        while follow:
            time.sleep(FOLLOW_POLL_S)
            published += self.publish_once(progress, published)
        progress.finish(f"{published:,} records from {self.table} to {self.topic}")
        return published
