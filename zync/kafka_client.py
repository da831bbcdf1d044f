"""Kafka clients for a target, and the topic housekeeping the verbs share."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from zync.config import Target
from zync.errors import ZyncError

METADATA_TIMEOUT_S = 15.0
# librdkafka reports these through error_cb and keeps retrying; zync stops at once.
_FATAL_CONNECT = {KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError.SASL_AUTHENTICATION_FAILED,
                  KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED}


class ConnectErrors:
    """error_cb that remembers the first authentication or TLS error, to fail fast with it."""

    def __init__(self) -> None:
        self.first: KafkaError | None = None

    def __call__(self, err: KafkaError) -> None:
        if self.first is None and (err.code() in _FATAL_CONNECT or err.fatal()):
            self.first = err


def _where(target: Target) -> str:
    return f"Kafka at {target.kafka.get('bootstrap.servers')} ({target.kafka.get('security.protocol', 'PLAINTEXT')}, target {target.name!r})"


def _raise_connect_error(target: Target, errors: ConnectErrors) -> None:
    if errors.first is not None:
        raise ZyncError(f"cannot connect to {_where(target)}: {errors.first.str()}; check the target's "
                        "security settings in profiles/zync.yml and the credentials in their environment variables")


def admin(target: Target, errors: ConnectErrors | None = None) -> AdminClient:
    return AdminClient({**target.kafka, "error_cb": errors or ConnectErrors(), "log_level": 0})


def producer(target: Target, **overrides: Any) -> Producer:
    # Idempotent: retries never duplicate or reorder, which egress relies on
    # to keep Kafka offsets equal to the table's output offsets.
    settings = {"enable.idempotence": True, "acks": "all", "linger.ms": 20, "compression.type": "lz4",
                "queue.buffering.max.messages": 500_000, "queue.buffering.max.kbytes": 262_144,
                # A fresh broker answers "coordinator load in progress" once; the retry is silent.
                "log_level": 3}
    return Producer({**target.kafka, **settings, **overrides})


def consumer(target: Target, group: str, **overrides: Any) -> Consumer:
    # Offsets live in the tables, never in Kafka's group offsets.
    settings = {"group.id": group, "enable.auto.commit": False, "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest", "log_level": 3}
    return Consumer({**target.kafka, **settings, **overrides})


def _metadata(target: Target, topic: str | None):
    """Cluster metadata, failing within a second or so on bad credentials or TLS."""
    errors = ConnectErrors()
    client = admin(target, errors)
    deadline = time.monotonic() + METADATA_TIMEOUT_S
    while True:
        try:
            return client.list_topics(topic=topic, timeout=1.0)
        except KafkaException as e:
            client.poll(0)  # serves error_cb, where authentication and TLS failures arrive
            _raise_connect_error(target, errors)
            if time.monotonic() >= deadline:
                raise ZyncError(f"cannot reach {_where(target)}: {e.args[0].str() if e.args else e}; "
                                "is it running (`zync up` for the local target)?") from None


def partitions(target: Target, topic: str) -> list[int]:
    """The topic's partition ids; a ZyncError if it does not exist."""
    entry = _metadata(target, topic).topics.get(topic)
    if entry is not None and entry.error is not None and entry.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        raise ZyncError(not_authorized(target, topic, "Describe"))
    if entry is None or entry.error is not None:
        raise ZyncError(f"topic {topic} does not exist on {_where(target)}")
    return sorted(entry.partitions)


def cluster_id(target: Target) -> str:
    """The Kafka cluster's id, the same whatever address a machine reaches it by; its bootstrap
    servers, sorted, for a broker that reports none."""
    found = _metadata(target, None).cluster_id
    if found:
        return str(found)
    servers = str(target.kafka.get("bootstrap.servers", ""))
    return ",".join(sorted(s.strip() for s in servers.split(",") if s.strip()))


def is_record(target: Target, msg: Any) -> bool:
    """Whether a consumed message is a record: False for a partition's end; a ZyncError for any other
    error (an ACL that refuses reading the topic named as such)."""
    error = msg.error()
    if error is None:
        return True
    if error.code() == KafkaError._PARTITION_EOF:
        return False
    if error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        raise ZyncError(not_authorized(target, msg.topic(), "Read"))
    raise ZyncError(f"consuming {msg.topic()}: {error}")


def not_authorized(target: Target, topic: str, operation: str) -> str:
    """The message for a topic the target's principal may not use (the broker's ACLs refuse it)."""
    who = target.kafka.get("sasl.username") or target.kafka.get("ssl.certificate.location") or "the anonymous user"
    return (f"not authorized to {operation.lower()} topic {topic} on {_where(target)} as {who}: ask the cluster's "
            f"admin for {operation} (and Describe) ACLs on it for this principal, or use another target")


def topic_names(target: Target) -> set[str]:
    """Every topic on the broker the target's principal may describe, the broker's own (__*) left out."""
    return named_topics(_metadata(target, None))


def named_topics(metadata: Any) -> set[str]:
    """The topic names of a metadata answer (list_topics), those in error and the broker's own (__*) left out."""
    return {name for name, entry in metadata.topics.items() if entry.error is None and not name.startswith("__")}


Watermarks = dict[tuple[str, int], tuple[int, int]]  # (topic, partition) -> (low, high)


def watermarks(consumer: Consumer, admin_client: AdminClient, topics: set[str]) -> Watermarks:
    """The low and high watermarks of every partition of `topics` (those that exist), in three requests.

    One metadata request and one ListOffsets request per end, however many
    topics: `zync run` asks this several times a second over every input
    topic of a whole database, where a request per partition would add up.
    """
    metadata = consumer.list_topics(timeout=METADATA_TIMEOUT_S).topics
    parts = [TopicPartition(t, p) for t in sorted(topics) if t in metadata and metadata[t].error is None
             for p in sorted(metadata[t].partitions)]
    if not parts:
        return {}
    ends = []
    for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
        futures = admin_client.list_offsets({tp: spec for tp in parts}, request_timeout=METADATA_TIMEOUT_S)
        ends.append({(tp.topic, tp.partition): future.result().offset for tp, future in futures.items()})
    return {key: (ends[0][key], ends[1][key]) for key in ends[1]}


def topic_exists(target: Target, topic: str) -> bool:
    entry = _metadata(target, topic).topics.get(topic)
    return entry is not None and entry.error is None


def ensure_topic(target: Target, topic: str, num_partitions: int = 1, replication_factor: int = -1) -> bool:
    """Create the topic if it is missing; True if it was created."""
    if topic_exists(target, topic):
        return False
    if num_partitions < 1:
        raise ZyncError(f"a topic needs at least one partition, not {num_partitions}")
    errors = ConnectErrors()
    client = admin(target, errors)  # held until the future resolves: the handle dies with it
    futures = client.create_topics([NewTopic(topic, num_partitions=num_partitions,
                                             replication_factor=replication_factor)])
    try:
        futures[topic].result(timeout=METADATA_TIMEOUT_S)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            _raise_connect_error(target, errors)
            raise ZyncError(f"cannot create topic {topic} on {_where(target)}: {e}") from None
    return True


def high_water_marks(target: Target, topic: str) -> dict[int, int]:
    parts = partitions(target, topic)
    c = consumer(target, group="zync-watermarks")
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=METADATA_TIMEOUT_S)[1] for p in parts}
    finally:
        c.close()
