"""Kafka clients for a target, and the topic housekeeping the verbs share."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zync.config import Target
from zync.errors import ZyncError

METADATA_TIMEOUT_S = 15.0


def admin(target: Target) -> AdminClient:
    return AdminClient(dict(target.kafka))


def producer(target: Target, **overrides: Any) -> Producer:
    # Idempotent: retries never duplicate or reorder, which egress relies on
    # to keep Kafka offsets equal to the table's output offsets.
    settings = {"enable.idempotence": True, "acks": "all", "linger.ms": 20, "compression.type": "lz4",
                # A fresh broker answers "coordinator load in progress" once; the retry is silent.
                "log_level": 3}
    return Producer({**target.kafka, **settings, **overrides})


def consumer(target: Target, group: str, **overrides: Any) -> Consumer:
    # Offsets live in the tables, never in Kafka's group offsets.
    settings = {"group.id": group, "enable.auto.commit": False, "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest"}
    return Consumer({**target.kafka, **settings, **overrides})


def partitions(target: Target, topic: str) -> list[int]:
    """The topic's partition ids; a ZyncError if it does not exist."""
    try:
        metadata = admin(target).list_topics(topic=topic, timeout=METADATA_TIMEOUT_S)
    except KafkaException as e:
        raise ZyncError(f"cannot reach Kafka at {target.kafka.get('bootstrap.servers')}: {e}") from None
    entry = metadata.topics.get(topic)
    if entry is None or entry.error is not None:
        raise ZyncError(f"topic {topic} does not exist on {target.kafka.get('bootstrap.servers')}")
    return sorted(entry.partitions)


def topic_exists(target: Target, topic: str) -> bool:
    try:
        partitions(target, topic)
        return True
    except ZyncError:
        return False


def ensure_topic(target: Target, topic: str, num_partitions: int = 1) -> bool:
    """Create the topic if it is missing; True if it was created."""
    if topic_exists(target, topic):
        return False
    client = admin(target)  # held until the future resolves: the handle dies with it
    futures = client.create_topics([NewTopic(topic, num_partitions=num_partitions, replication_factor=-1)])
    try:
        futures[topic].result(timeout=METADATA_TIMEOUT_S)
    except KafkaException as e:
        if "TOPIC_ALREADY_EXISTS" not in str(e):
            raise ZyncError(f"cannot create topic {topic}: {e}") from None
    return True


def high_water_marks(target: Target, topic: str) -> dict[int, int]:
    c = consumer(target, group="zync-watermarks")
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=METADATA_TIMEOUT_S)[1]
                for p in partitions(target, topic)}
    finally:
        c.close()
