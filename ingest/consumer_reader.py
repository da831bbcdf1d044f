"""The Python consumer's reader: librdkafka reads, each message is taken one at a time, batches commit
in the background (ingest/commit.py).

It reads a whole run when Spark's reader cannot (`--reader python`, a profile
the Java client cannot be given, a Spark failure that is not the data's), and
exactly the offsets of a batch whose Spark job failed on its data
(`read_range`): it alone sees each message, so it alone can stop at the first
one that cannot be taken, or dead-letter it. ingest/fallback.py says when.
The consume loop is confluent-kafka's own (`consume` in batches, `close` at the end).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, Message as KafkaMessage, TopicPartition

from ingest.commit import Committer
from ingest.dead_letters import DeadLetter
from ingest.decode import Message
from ingest.schemas import IncompatibleChangeError
from ingest.topic import TopicState
from zync import kafka_client
from zync.config import Target
from zync.errors import ZyncError
from zync.progress import CaughtUp, Progress
from zync.wire import DecodeError

POLL_MESSAGES = 10_000
LAG_REFRESH_S = 2.0


class ConsumerReader:
    name = "consumer"

    def __init__(self, target: Target, states: Mapping[str, TopicState], partitions: Mapping[str, list[int]],
                 committer: Committer, progress: Progress, batch_size: int, max_interval: float):
        self.target = target
        self.states = states
        self.partitions = partitions
        self.committer = committer
        self.progress = progress
        self.batch_size = batch_size
        self.max_interval = max_interval
        self._kept: Consumer | None = None  # the consumer a read with keep=True left open

    def read(self, exit_after: float | None, keep: bool = False,
             marks: kafka_client.Watermarks | None = None) -> None:
        """Consume every topic from its read offsets, take message by message, commit in the background.

        keep: the consumer stays open for the next read (close() ends it). A kept Ingest (zync
        run) reads a few records per topic every cycle, where a new consumer's connections and
        first fetch would cost more than the records.
        marks: the partitions' watermarks if the caller has them (zync run reads every topic's at
        a cycle's start): the read goes up to them without asking the broker again.
        """
        consumer = self._kept or kafka_client.consumer(self.target, group=f"zync-ingest-{'-'.join(self.states)}")
        self._kept = None
        ends = self._watermarks(consumer, marks)
        assignment = self._assignment(ends)
        consumer.assign(assignment)
        caught_up = CaughtUp(self._start_marks(assignment, ends))
        lag_at = 0.0
        try:
            while True:
                wanted = min(self.batch_size, POLL_MESSAGES)
                if exit_after == 0:
                    # Ask for no more than the start's marks hold: consume() returns as soon as they are
                    # read, instead of waiting out its timeout for a batch's worth.
                    wanted = max(1, min(wanted, self._left(caught_up)))
                polled = consumer.consume(num_messages=wanted, timeout=0.2)
                for msg in polled:
                    self._check(msg)
                    if msg.error() is None and msg.offset() < self.states[msg.topic()].read_offsets.get(msg.partition(), 0):
                        continue  # fetched before this read's assign moved the partition on: taken already
                    caught_up.active()
                    self._take(msg)
                    caught_up.read_to(msg.topic(), msg.partition(), msg.offset() + 1)
                if not polled:
                    # Past a transaction's marker or compacted-away offsets: no message, the position moved.
                    for tp in consumer.position([TopicPartition(t, p) for t, p in caught_up.behind]):
                        if tp.offset >= 0:
                            caught_up.read_to(tp.topic, tp.partition, tp.offset)
                self.progress.read(len(polled))
                now = time.monotonic()
                for state in self.states.values():
                    if state.holding and now - state.first_at >= self.max_interval:
                        self.committer.commit(state)
                if self.progress.live and now - lag_at >= LAG_REFRESH_S:
                    lag_at = now
                    self._refresh_lag(consumer, assignment)
                if not polled or (exit_after == 0 and caught_up.caught_up):
                    # exit_after 0 (zync run's cycle): done once what the run started with is read,
                    # also while new messages keep arriving (they are the next cycle's).
                    self.committer.commit_all()
                    if caught_up.done(exit_after):
                        break
        except BaseException:
            keep = False  # an error's consumer may hold a fetch past what was taken: the next read starts anew
            raise
        finally:
            # A batch handed to Spark lands (or fails) before the run ends; whatever was read
            # but not handed over is read again by the next run.
            try:
                self.committer.wait()
            finally:
                if keep:
                    # Fetching stops till the next read: a fetch still in flight then (the broker holds
                    # it up to fetch.wait.max.ms when there is nothing new) would hold up that read's
                    # first fetch on the same connection, ~0.4 s a topic every cycle.
                    consumer.unassign()
                    self._kept = consumer
                else:
                    consumer.close()

    def close(self) -> None:
        """Close the consumer a read kept open, if any."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.close()

    def _left(self, caught_up: CaughtUp) -> int:
        """Offsets between what was read and the start's marks: the messages left, but for markers."""
        return sum(max(0, high - self.states[t].read_offsets.get(p, 0)) for (t, p), high in caught_up.behind.items())

    def read_range(self, state: TopicState, ranges: Mapping[int, tuple[int, int]]) -> None:
        """Read exactly the planned offsets and take them message by message (a batch Spark could not take)."""
        consumer = kafka_client.consumer(self.target, group=f"zync-ingest-{state.topic}")
        consumer.assign([TopicPartition(state.topic, p, start) for p, (start, _) in ranges.items()])
        open_ranges = dict(ranges)
        progress_at = time.monotonic()
        try:
            while open_ranges:
                polled = consumer.consume(num_messages=POLL_MESSAGES, timeout=0.2)
                for msg in polled:
                    self._check(msg)
                    if msg.error() is None and msg.offset() < ranges[msg.partition()][1]:
                        self._take(msg)
                self.progress.read(len(polled))
                for tp in consumer.position([TopicPartition(state.topic, p) for p in open_ranges]):
                    if tp.offset >= open_ranges[tp.partition][1]:
                        del open_ranges[tp.partition]
                        progress_at = time.monotonic()
                if polled:
                    progress_at = time.monotonic()
                elif time.monotonic() - progress_at > kafka_client.METADATA_TIMEOUT_S:
                    raise ZyncError(f"cannot read offsets {open_ranges} of topic {state.topic}: the broker "
                                      f"returned nothing for {kafka_client.METADATA_TIMEOUT_S:.0f}s")
            self.committer.commit_all()
        finally:
            consumer.close()
        for p, (_, end) in ranges.items():
            state.committed_to(p, end)

    def _check(self, msg: KafkaMessage) -> None:
        kafka_client.is_record(self.target, msg)  # raises for an error; a partition's end passes

    def _take(self, msg: KafkaMessage) -> None:
        """Take one message: hold it for the next commit, or dead-letter it, or commit what came before
        it and stop (errors.tolerance none)."""
        state = self.states[msg.topic()]
        if state.skip_known_dead(msg.partition(), msg.offset()):
            return
        keep_headers = state.tolerance == "all"
        try:
            m = Message.of(msg, keep_headers)
        except DecodeError as e:
            if state.tolerance == "all":
                return state.hold_dead(DeadLetter(Message.as_read(msg, keep_headers), str(e)))
            self.committer.commit_all()
            raise DecodeError(f"{e} Nothing from this message on is committed; to go on past such messages, "
                              "ingest with --errors-tolerance all (they land in a dead-letter table).") from None
        try:
            for part, schema_id in (("key", m.key_schema_id), ("value", m.value_schema_id)):
                state.schemas.accept(part, schema_id, m.where, m.offset, m.partition)
        except IncompatibleChangeError as e:
            if state.tolerance == "all":
                return state.hold_dead(DeadLetter(m, str(e)))
            self.committer.commit_all()
            raise
        except DecodeError as e:  # its schema id is not in the registry
            if state.tolerance == "all":
                return state.hold_dead(DeadLetter(m, f"{m.where}: {e}"))
            self.committer.commit_all()
            raise DecodeError(f"{m.where}: {e}") from None
        state.hold(m)
        if len(state.messages) + len(state.dead) >= self.batch_size:
            self.committer.commit(state)

    def _watermarks(self, consumer: Consumer, known: kafka_client.Watermarks | None) -> kafka_client.Watermarks:
        """Every assigned partition's low and high watermarks: the caller's, else asked of the broker.

        A kept consumer's fetch to the broker is in flight when a read starts, and the broker
        answers one request of a connection at a time: asking it for the marks waited out that
        fetch (~0.4 s a topic, every cycle). Marks the caller read are used as they are.
        """
        ends = {}
        for topic in self.states:
            for p in self.partitions[topic]:
                if known is not None and (topic, p) in known:
                    ends[(topic, p)] = known[(topic, p)]
                else:
                    ends[(topic, p)] = consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                                      timeout=kafka_client.METADATA_TIMEOUT_S)
        return ends

    def _assignment(self, ends: kafka_client.Watermarks) -> list[TopicPartition]:
        """Every partition from its read offset; one read for the first time from its low watermark.

        Not from OFFSET_BEGINNING: librdkafka resolves a logical offset with a ListOffsets request
        that a new consumer first retries after a fixed 500 ms while it learns the partition's
        leader, ~0.5 s a new table, which a whole database's bootstrap paid table after table.
        Retention moving the low mark meanwhile is auto.offset.reset's case, as it always was.
        """
        return [TopicPartition(topic, p, state.read_offsets.get(p, ends.get((topic, p), (OFFSET_BEGINNING,))[0]))
                for topic, state in self.states.items() for p in self.partitions[topic]]

    @staticmethod
    def _start_marks(assignment: list[TopicPartition], ends: kafka_client.Watermarks) -> dict[tuple[str, int], int]:
        """High-water marks at the start of the partitions that have messages left to read."""
        marks = {}
        for tp in assignment:
            low, high = ends[(tp.topic, tp.partition)]
            start = low if tp.offset < 0 else tp.offset
            if high > start:
                marks[(tp.topic, tp.partition)] = high
        return marks

    def _refresh_lag(self, consumer: Consumer, assignment: list[TopicPartition]) -> None:
        for tp in assignment:
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=0.5)
            except Exception:  # noqa: BLE001 - lag is cosmetic; a slow broker must not stop ingest
                continue
            position = self.states[tp.topic].read_offsets.get(tp.partition, 0)
            self.progress.lag[(tp.topic, tp.partition)] = max(0, high - position)
