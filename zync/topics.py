"""`zync produce`, `zync consume`, `zync ls`: JSON lines to and from Avro topics."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import sys
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from confluent_kafka import KafkaError, TopicPartition

from zync import kafka_client
from zync.config import Target
from zync.errors import ZyncError
from zync.progress import CaughtUp
from zync.schema_inference import infer_schema
from zync.wire import Registry, encode


def _json_default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def to_json_line(record: dict[str, Any]) -> str:
    return json.dumps(record, default=_json_default, separators=(",", ":"))


def _load_schema(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ZyncError(f"{path}: not a readable Avro schema (.avsc JSON): {e}") from None


def read_json_lines(stream: TextIO, name: str) -> list[dict[str, Any]]:
    records = []
    for n, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise ZyncError(f"{name}:{n}: not JSON ({e.msg}); each line is {{\"key\": ..., \"value\": ...}}") from None
        if not isinstance(record, dict) or not set(record) <= {"key", "value"}:
            raise ZyncError(f"{name}:{n}: each line is {{\"key\": ..., \"value\": ...}}, got {line.strip()[:80]}")
        records.append(record)
    return records


def produce(target: Target, topic: str, records: list[dict[str, Any]],
            key_schema_file: Path | None = None, value_schema_file: Path | None = None,
            partitions: int = 1) -> int:
    """Encode records as Avro, register their schemas under T-key / T-value, produce them in order."""
    registry = Registry(target.schema_registry)
    safe = "".join(c if c.isalnum() else "_" for c in topic)
    key_schema = _load_schema(key_schema_file) or infer_schema((r.get("key") for r in records), f"{safe}_key")
    value_schema = _load_schema(value_schema_file) or infer_schema((r.get("value") for r in records), f"{safe}_value")
    # A side that is null in every record (no keys, only tombstones) registers nothing.
    key_writer = registry.register(f"{topic}-key", key_schema) if key_schema != "null" else None
    value_writer = registry.register(f"{topic}-value", value_schema) if value_schema != "null" else None
    kafka_client.ensure_topic(target, topic, num_partitions=partitions)
    producer = kafka_client.producer(target)
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    for n, record in enumerate(records, start=1):
        try:
            key = encode(key_writer, record.get("key")) if record.get("key") is not None else None
            value = encode(value_writer, record.get("value")) if record.get("value") is not None else None
        except Exception as e:  # noqa: BLE001 - fastavro's validation errors vary
            raise ZyncError(f"record {n} does not fit the schema: {e}\n    {to_json_line(record)[:200]}") from None
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:  # librdkafka's queue is full: let deliveries drain it
                producer.poll(0.05)
        producer.poll(0)
    producer.flush()
    if failures:
        raise ZyncError(f"{len(failures)} records were not delivered to {topic}: {failures[0]}")
    return len(records)


def consume(target: Target, topic: str, from_beginning: bool = False, exit_after: float | None = None,
            max_records: int | None = None, partition: int | None = None, offset: int | None = None) -> Iterator[dict[str, Any]]:
    """Yield decoded records with their Kafka envelope until idle for exit_after seconds or max_records."""
    registry = Registry(target.schema_registry)
    consumer = kafka_client.consumer(target, group=f"zync-consume-{uuid.uuid4()}")
    parts = [partition] if partition is not None else kafka_client.partitions(target, topic)
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in parts}
    # Concrete offsets, not OFFSET_BEGINNING/OFFSET_END: a new consumer resolves a logical offset
    # with a ListOffsets request it first retries after a fixed 500 ms (ingest/consumer_reader.py).
    starts = {p: offset if offset is not None else (low if from_beginning else high) for p, (low, high) in ends.items()}
    consumer.assign([TopicPartition(topic, p, starts[p]) for p in parts])
    # --exit-after counts idle time once the records already there at the start are read.
    tailing = offset is None and not from_beginning
    caught_up = CaughtUp({} if tailing else {(topic, p): high for p, (_, high) in ends.items() if high > starts[p]})
    seen = 0
    try:
        while max_records is None or seen < max_records:
            msg = consumer.poll(0.2)
            if msg is None:
                if caught_up.done(exit_after):
                    return
                continue
            if not kafka_client.is_record(target, msg):
                continue
            caught_up.active()
            caught_up.read_to(topic, msg.partition(), msg.offset() + 1)
            where = f"{msg.topic()}[{msg.partition()}]@{msg.offset()}"
            _, key = registry.decode(msg.key(), where + " key")
            _, value = registry.decode(msg.value(), where + " value")
            seen += 1
            yield {"kafka": {"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset()},
                   "key": key, "value": value}
    finally:
        consumer.close()


def ls(target: Target) -> Iterator[str]:
    """One line per registered schema version: subject, version, schema id (tab-separated)."""
    registry = Registry(target.schema_registry)
    try:
        subjects = sorted(registry.client.get_subjects())
    except Exception as e:  # noqa: BLE001 - HTTP and registry errors alike
        raise ZyncError(f"cannot list the subjects of the schema registry at {registry.url}: "
                        f"{getattr(e, 'error_message', type(e).__name__)}") from None
    for subject in subjects:
        for version in registry.client.get_versions(subject):
            registered = registry.client.get_version(subject, version)
            yield f"{subject}\tversion {version}\tid {registered.schema_id}"


def write_lines(lines: Iterable[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout  # looked up now: tests and callers may have replaced it
    n = 0
    for line in lines:
        out.write(line + "\n")
        out.flush()
        n += 1
    return n
