"""Spark's reader (the default): plan each batch's offsets, let one Spark job read, decode and commit them.

Why: on two cores, zync's Python consumer reading, parsing and shipping a
million messages to Spark took a core's worth of time from Spark's decode and
write (bench/ingest_throughput.py: 1.5x slower than Structured Streaming).
Spark reading the same offsets is the anchor's own engine, minus its
streaming offset log. What stays zync's: this loop picks each batch's offsets
(ingest/spark_job.py `plan`), the batch is one idempotent Delta commit, and
the resume point is still the table's own offsets. A batch whose job fails
goes to the consumer as ingest/fallback.py decides.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from confluent_kafka import Consumer, TopicPartition

from ingest.consumer_reader import ConsumerReader
from ingest.dead_letters import coordinates
from ingest.fallback import SPARK_FAILURES, Fallback, SparkCannotRead, after_failed_batch
from ingest.spark_job import decode_batch, kafka_batch, plan
from ingest.table import write_partitions
from ingest.topic import TopicState
from zync import kafka_client
from zync.config import Target
from zync.progress import CaughtUp, Progress

WATERMARK_POLL_S = 0.5  # how often the reader looks for new messages when caught up


class SparkReader:
    name = "spark"

    def __init__(self, spark, target: Target, states: Mapping[str, TopicState], partitions: Mapping[str, list[int]],
                 options: dict[str, str], consumer: ConsumerReader, progress: Progress, batch_size: int,
                 max_interval: float, batches_read: dict[str, int], shape: Callable | None = None):
        self.spark = spark
        self.target = target
        self.states = states
        self.partitions = partitions
        self.options = options
        self.consumer = consumer  # reads the batches Spark cannot take (ingest/fallback.py)
        self.progress = progress
        self.batch_size = batch_size
        self.max_interval = max_interval
        self.batches_read = batches_read
        self.shape = shape  # the shaper's apply, if any

    def read(self, exit_after: float | None) -> None:
        """Plan batches and let Spark read them; SparkCannotRead if the consumer must read the rest.

        A batch is read when it is full, when no new message arrived since the last look
        (nothing to wait for), or --max-interval after its first message was seen.
        exit_after 0 (zync run's cycle) reads what the topics held when the run started, at
        once, and returns: under a steady stream there is always a new message, so waiting
        for a quiet look, or for the marks to stop moving, would keep the cycle's other
        stages waiting for as long as the stream lasts.
        """
        watcher = kafka_client.consumer(self.target, group=f"zync-ingest-{'-'.join(self.states)}")
        try:
            marks = self._watermarks(watcher)
            caught_up = CaughtUp({(t, p): high for t, (lows, highs) in marks.items() for p, high in highs.items()
                                  if high > max(self.states[t].read_offsets.get(p, 0), lows[p])})
            seen_high = {t: highs for t, (_, highs) in marks.items()}
            waiting_since: dict[str, float] = {}
            up_to_start = exit_after == 0
            while True:
                now, worked = time.monotonic(), False
                for topic, (low, high) in marks.items():
                    state = self.states[topic]
                    ranges = plan(state.read_offsets, low, high, self.batch_size)
                    for p in high:
                        self.progress.lag[(topic, p)] = max(0, high[p] - max(state.read_offsets.get(p, 0), low[p]))
                    if not ranges:
                        waiting_since.pop(topic, None)
                        continue
                    first_seen = waiting_since.setdefault(topic, now)
                    full = sum(e - s for s, e in ranges.values()) >= self.batch_size
                    if not (full or up_to_start or high == seen_high.get(topic)
                            or now - first_seen >= self.max_interval):
                        continue
                    self._batch(state, ranges)
                    waiting_since.pop(topic, None)
                    worked = True
                    caught_up.active()
                    for p, (_, end) in ranges.items():
                        caught_up.read_to(topic, p, end)
                self.progress.read(0)
                if up_to_start and caught_up.caught_up:
                    return
                if up_to_start and worked:
                    continue  # the start's marks stay the bound: what came since is the next cycle's
                if not worked:
                    if caught_up.done(exit_after):
                        return
                    time.sleep(WATERMARK_POLL_S)
                seen_high = {t: highs for t, (_, highs) in marks.items()}
                marks = self._watermarks(watcher)
        finally:
            watcher.close()

    def _watermarks(self, consumer: Consumer) -> dict[str, tuple[dict[int, int], dict[int, int]]]:
        """(low, high) marks per partition of every topic; high is the last stable offset (read_committed)."""
        marks = {}
        for topic in self.states:
            low, high = {}, {}
            for p in self.partitions[topic]:
                low[p], high[p] = consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                                 timeout=kafka_client.METADATA_TIMEOUT_S)
            marks[topic] = (low, high)
        return marks

    def _batch(self, state: TopicState, ranges: dict[int, tuple[int, int]]) -> None:
        """One planned batch: Spark reads, decodes and commits it; a batch it cannot take goes to the consumer."""
        schemas, table = state.schemas, state.table
        key_writers, key_type, key_changes = schemas.candidates("key")
        value_writers, value_type, value_changes = schemas.candidates("value")
        key_type = schemas.column_type("key", key_type)
        value_type = schemas.column_type("value", value_type)
        where = f"the batch of {state.topic} up to offsets " + ", ".join(
            f"[{p}] {end - 1}" for p, (_, end) in sorted(ranges.items()))
        try:
            changes = key_changes + value_changes
            if not self.shape and changes and table.exists():
                table.evolve(changes, key_type, value_type)
            raw = kafka_batch(self.spark, self.options, state.topic, ranges, key_writers, value_writers)
            known = {p: {o for o in state.known_dead.get(p, ()) if start <= o < end}
                     for p, (start, end) in ranges.items()}
            if any(known.values()):  # dead-lettered before a kill stopped the raw commit after it
                raw = raw.where(~coordinates(known))
            frame = decode_batch(raw, key_writers, value_writers, key_type, value_type)
            if self.shape:
                frame = self.shape(frame)
            records = sum(end - start for start, end in ranges.values())
            table.append(frame.coalesce(write_partitions(self.spark, records)), where)
        except SPARK_FAILURES as e:
            then, cause = after_failed_batch(e)
            self.progress.log("spark-read-failed", topic=state.topic, ranges=ranges, error=cause.strip()[:500],
                              then=then.value)
            if then is Fallback.REST:
                raise SparkCannotRead(f"Spark failed reading {where}: {cause.strip()[:500]}") from None
            self.consumer.read_range(state, ranges)
            self.batches_read["consumer"] += 1
            return
        schemas.took("key", key_writers, key_type)
        schemas.took("value", value_writers, value_type)
        schemas.note()
        rows = table.last_rows if table.last_rows is not None else sum(e - s for s, e in ranges.values())
        for p, (_, end) in ranges.items():
            state.next_offsets[p] = state.read_offsets[p] = end
        state.committed += rows
        self.batches_read["spark"] += 1
        self.progress.records += rows
        self.progress.commit(table.label, rows, dict(state.next_offsets),
                             check_ms=round(table.check_seconds * 1000))
