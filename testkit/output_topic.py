"""An output topic's records as a downstream consumer sees them: offset, decoded value and the source
transaction header egress sets on each record (zync.transactions.OUTPUT_TRANSACTION_HEADER)."""

from __future__ import annotations

from typing import NamedTuple

from confluent_kafka import TopicPartition

from zync import kafka_client
from zync.transactions import OUTPUT_TRANSACTION_HEADER
from zync.wire import Registry


class Published(NamedTuple):
    offset: int
    value: dict
    transaction: str | None  # the header, None on a record of no source transaction


def published(target, topic: str, least: int | None = None, polls: int = 60) -> list[Published]:
    """The records of partition 0 of `topic`, from its start: all it holds now (`least` None), or until
    `least` records were read (a topic still being written). [] when the topic does not exist."""
    if topic not in kafka_client.topic_names(target):
        return []
    wanted = kafka_client.high_water_marks(target, topic)[0] if least is None else least
    registry, consumer = Registry(target.schema_registry), kafka_client.consumer(target, group=f"test-read-{topic}")
    found: list[Published] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        for _ in range(polls):
            if len(found) >= wanted:
                break
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            header = dict(msg.headers() or []).get(OUTPUT_TRANSACTION_HEADER)
            found.append(Published(msg.offset(), registry.decode(msg.value(), topic)[1],
                                   header.decode() if header is not None else None))
    finally:
        consumer.close()
    return found
