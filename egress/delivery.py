"""Producing a batch of pre-encoded records and proving each landed at its own offset.

The producer is idempotent (no duplicates or reordering on retries) and not
transactional (commit markers would take offsets). With one partition,
delivery reports arrive in produce order, so one counter checks them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from confluent_kafka import KafkaError, Message, Producer

from zync.errors import ZyncError
from zync.transactions import OUTPUT_TRANSACTION_HEADER

CHECK_EVERY = 1024
QUEUE_FULL_WAIT_S = 0.05


class OffsetMismatchError(ZyncError):
    """Kafka assigned an offset other than the row's: another process writes to the topic."""


class DeliveryCheck:
    """The on_delivery callback: every report must carry the next expected offset."""

    def __init__(self, topic: str, first_offset: int):
        self.topic = topic
        self.expected = first_offset
        self.delivered = 0
        self.mismatch: str | None = None
        self.failure: str | None = None

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self.failure = self.failure or f"record for offset {self.expected}: {err.str()}"
        elif msg.offset() != self.expected and self.mismatch is None:
            self.mismatch = f"the record for output offset {self.expected} landed at Kafka offset {msg.offset()}"
        self.expected += 1
        self.delivered += 1

    @property
    def failed(self) -> bool:
        return self.mismatch is not None or self.failure is not None

    def raise_if_failed(self) -> None:
        if self.mismatch is not None:
            raise OffsetMismatchError(
                f"{self.topic}: {self.mismatch}: another process is writing to this topic. Stop it (one "
                "`zync to-kafka` per topic, and nothing else may produce to an output topic), then run "
                "again: egress resumes at the topic's high-water mark."
            )
        if self.failure is not None:
            raise ZyncError(f"{self.topic}: Kafka did not accept a record ({self.failure}); "
                            "nothing after it was published; run again to resume")


def produce_batch(producer: Producer, topic: str, keys: Sequence[bytes | None], values: Sequence[bytes | None],
                  check: DeliveryCheck, on_progress: Callable[[int], None] | None = None,
                  fenced: Callable[[], bool] | None = None,
                  transactions: Sequence[str | None] | None = None) -> int:
    """Queue the batch in order on partition 0; returns how many were queued (stops early on a failure,
    or when `fenced` says, asked before every CHECK_EVERY records, that this egress's turn is over).
    `transactions`: each record's source transaction id, sent as its OUTPUT_TRANSACTION_HEADER (a header
    takes no offset: the records stay at their own)."""
    produce = producer.produce
    for i, (key, value) in enumerate(zip(keys, values)):
        if i % CHECK_EVERY == 0 and fenced is not None and fenced():
            return i
        transaction = transactions[i] if transactions is not None else None
        while True:
            try:
                if transaction is None:
                    produce(topic, value, key, 0)
                else:
                    produce(topic, value, key, 0, headers=[(OUTPUT_TRANSACTION_HEADER, transaction.encode())])
                break
            except BufferError:
                # librdkafka's queue is full: serve delivery reports until there is room.
                producer.poll(QUEUE_FULL_WAIT_S)
        if i % CHECK_EVERY == 0:
            producer.poll(0)
            if check.failed:
                return i + 1
            if on_progress is not None:
                on_progress(i)
    producer.poll(0)
    return len(values)
