"""The ingest loop: read, check each new writer schema, append one Delta commit per batch.

The resume point is the table itself (its largest offset per topic-partition);
see ingest/table.py for why a crash or a second ingest never duplicates.
A message that cannot be taken (not Avro, an incompatible schema) stops the
run after committing the messages read before it, and nothing after it; with
errors.tolerance `all` it goes to the table's dead-letter table instead
(ingest/dead_letters.py, which says how that stays exactly once) and ingest
goes on. Only the consumer path knows the exact message, so it is the one that
dead-letters: a Spark batch that fails falls back to it as before.

Two readers. By default Spark reads each batch's offsets from Kafka itself
(ingest/spark_read.py): this loop plans the offsets, Spark reads, decodes and
writes them in one job. A batch that job cannot take is read again here with
the Python consumer, message by message, which finds the message and stops at
it. With `--reader python` (or a profile the Java client cannot be given) the
consumer reads everything: batches are then written by one background thread,
one at a time and in order (ingest/pipeline.py), while this thread reads the next.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, TopicPartition
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import types as T

from ingest.dead_letters import DeadLetter, DeadLetterTable, check_tolerance, coordinates, stored_message
from ingest.decode import BatchDecodeError, Decoder, Message, PreparedBatch
from ingest.evolution import Change, IncompatibleSchemaError, merge
from ingest.java_kafka import NoJavaEquivalent, java_kafka_options
from ingest.pipeline import OneInFlight
from ingest.progress import IngestProgress
from ingest.shaper import check_shaped_schema, load_shaper
from ingest.spark_read import MALFORMED_AVRO, UNDECODABLE, WriterType, decode_batch, kafka_batch, plan
from ingest.table import RawTable, kafka_struct
from zync import kafka_client
from zync.avro_types import connect_names, field_defaults, field_paths
from zync.config import Target
from zync.ingest_options import DEFAULT_TOLERANCE, configured_tolerance
from zync.errors import ZyncError
from zync.spark import spark_session
from zync.tables import qualified, raw_table_name
from zync.wire import DecodeError, Registry, schema_id_of

# Batches are large because each costs seconds whatever its size. The consumer holds the
# messages of two batches in Python (1M events: 10 commits of 100k took 80 s, 4 of 250k 44 s).
# Spark's reader holds none: its tasks stream their offset ranges into the table, so its
# batches are larger still; a cold JVM takes a few jobs to warm up (1M events: 4 jobs of 250k
# 52 s, one of 1M 38 s; bench/ingest_throughput.py).
DEFAULT_BATCH_SIZE = {"spark": 1_000_000, "python": 250_000}
DEFAULT_MAX_INTERVAL_S = 5.0
POLL_MESSAGES = 10_000
LAG_REFRESH_S = 2.0
READERS = ("spark", "python")
WATERMARK_POLL_S = 0.5  # how often the Spark reader looks for new messages when caught up


class IncompatibleChangeError(ZyncError):
    """A message's writer schema cannot evolve its table."""


@dataclass
class TopicState:
    """One topic's table, its current key/value types and the messages waiting for their commit."""

    topic: str
    table: RawTable
    key_type: T.DataType | None = None
    value_type: T.DataType | None = None
    accepted: dict[str, set[int]] = field(default_factory=lambda: {"key": set(), "value": set()})
    last_schema: dict[str, int | None] = field(default_factory=lambda: {"key": None, "value": None})
    changes: list[Change] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    first_at: float = 0.0
    next_offsets: dict[int, int] = field(default_factory=dict)  # committed: partition -> next offset
    read_offsets: dict[int, int] = field(default_factory=dict)  # read: partition -> next offset
    committed: int = 0
    dead_table: DeadLetterTable | None = None
    dead: list[DeadLetter] = field(default_factory=list)  # dead letters waiting for the batch's commit
    # Dead letters past the raw table's resume point (a kill between the two commits): skipped when met again.
    known_dead: dict[int, set[int]] = field(default_factory=dict)
    dead_lettered: int = 0
    tolerance: str = DEFAULT_TOLERANCE  # errors.tolerance: none (stop at a bad message) or all (dead-letter it)


@dataclass(frozen=True)
class Batch:
    """One topic's messages sealed for one commit, with the column types they are written as."""

    state: TopicState
    messages: list[Message]
    key_type: T.DataType
    value_type: T.DataType
    changes: list[Change]
    prepared: PreparedBatch | None = None
    dead_letters: tuple[DeadLetter, ...] = ()


class Ingest:
    def __init__(self, target: Target, topics: list[str], table: str | None = None,
                 shaper: Path | None = None, batch_size: int | None = None,
                 max_interval: float = DEFAULT_MAX_INTERVAL_S, location: str | None = None,
                 decoder: str = "jvm", reader: str = "spark", progress: IngestProgress | None = None,
                 errors_tolerance: str | None = None):
        if errors_tolerance is not None:
            check_tolerance(errors_tolerance, "--errors-tolerance")
        if reader not in READERS:
            raise ZyncError(f"--reader is one of {', '.join(READERS)}, not {reader!r}")
        if (table or location) and len(topics) > 1:
            raise ZyncError("--table/--location name the table of a single topic; with several topics "
                            "each gets raw_<topic>")
        if batch_size is not None and batch_size < 1:
            raise ZyncError("--batch-size must be at least 1")
        self.target = target
        self.topics = topics
        self.shaper_sql = load_shaper(shaper) if shaper else None
        self.shaper_name = str(shaper) if shaper else ""
        self.max_interval = max_interval
        self.registry = Registry(target.schema_registry)
        self.spark = spark_session(target)
        # Delta rebuilds a table's state (for the resume point's txn version) in this many
        # tasks; its default of 50 is for clusters and costs seconds per table here.
        self.spark.conf.set("spark.databricks.delta.snapshotPartitions", "2")
        self.decoder = Decoder(self.spark, self.registry, decoder)
        # Spark reads only what Spark decodes: fastavro needs the messages in Python anyway.
        self.reader = reader if decoder == "jvm" else "python"
        self.batch_size = batch_size or DEFAULT_BATCH_SIZE[self.reader]
        # Messages the consumer holds in Python: also when it reads a batch Spark could not take.
        self.consumer_batch_size = min(self.batch_size, DEFAULT_BATCH_SIZE["python"])
        self.progress = progress or IngestProgress()
        self.writer = OneInFlight()
        self._resumed = False  # a kept Ingest (zync run) resumes from its tables once, then from its own state
        self.partitions: dict[str, list[int]] = {}  # per topic, as the run found them at its start
        # Batches Spark read, and batches it could not take that the consumer read instead.
        self.batches_read = {"spark": 0, "consumer": 0}
        self.states: dict[str, TopicState] = {}
        for topic in topics:
            raw = (RawTable(self.spark, location=location) if location
                   else RawTable(self.spark, name=qualified(target, table or raw_table_name(topic)).replace("`", "")))
            # The flag wins over the project's per-topic setting (models/raw/__sources.yml).
            tolerance = check_tolerance(errors_tolerance or configured_tolerance(topic) or DEFAULT_TOLERANCE,
                                        f"topic {topic} (models/raw/__sources.yml)")
            self.states[topic] = TopicState(topic, raw, dead_table=DeadLetterTable(self.spark, raw),
                                            tolerance=tolerance)

    # --- start ---------------------------------------------------------------

    def _resume(self, state: TopicState) -> dict[int, int]:
        # Read whatever errors.tolerance says now: dead letters a kill left past the resume point
        # must be skipped even if this run stops at bad messages instead.
        if not state.table.exists():
            state.known_dead = state.dead_table.open(state.topic, {})
            return self._past_known_dead(state)
        resume = state.table.resume(state.topic)
        state.known_dead = state.dead_table.open(state.topic, resume.offsets)
        if not self.shaper_sql:
            # With a shaper the table holds shaped columns; the batch keeps Avro's types.
            state.key_type, state.value_type = resume.key_type, resume.value_type
        state.next_offsets = dict(resume.offsets)
        state.read_offsets = dict(resume.offsets)
        state.last_schema = {"key": resume.key_schema_id, "value": resume.value_schema_id}
        return self._past_known_dead(state)

    @staticmethod
    def _past_known_dead(state: TopicState) -> dict[int, int]:
        """Start each partition after the dead letters right at its resume point (the usual case: the
        last messages of a partition were dead letters); others are skipped where they are met."""
        for p, offsets in state.known_dead.items():
            at = state.next_offsets.get(p, 0)
            while at in offsets:
                at += 1
            if at != state.next_offsets.get(p, 0):
                state.next_offsets[p] = state.read_offsets[p] = at
        return dict(state.next_offsets)

    # --- per message ---------------------------------------------------------

    def _accept_schema(self, state: TopicState, part: str, schema_id: int | None, m: Message) -> None:
        """Check a writer schema the first time it shows up; evolve the batch's type or refuse."""
        if schema_id is None or schema_id in state.accepted[part]:
            return
        new_type = self.decoder.spark_type(schema_id)
        current = state.key_type if part == "key" else state.value_type
        if current is None or isinstance(current, T.NullType):
            merged = new_type
        else:
            try:
                merged, changes = merge(current, new_type, (part,))
            except IncompatibleSchemaError as e:
                raise self._incompatible(state, part, schema_id, current, m, e) from None
            state.changes += changes
        if part == "key":
            state.key_type = merged
        else:
            state.value_type = merged
        state.accepted[part].add(schema_id)

    def _incompatible(self, state: TopicState, part: str, schema_id: int, current: T.DataType,
                      m: Message, e: IncompatibleSchemaError) -> IncompatibleChangeError:
        old_id = state.last_schema[part]
        old = (f"writer schema id {old_id}: {json.dumps(self.registry.schema(old_id).schema)}"
               if old_id is not None else f"the table's column type {current.simpleString()}")
        new = json.dumps(self.registry.schema(schema_id).schema)
        return IncompatibleChangeError(
            f"{m.where}: the {part} schema changed incompatibly for table {state.table.label}: {e}.\n"
            f"    old: {old}\n    new: writer schema id {schema_id}: {new}\n"
            f"Everything before offset {m.offset} of partition {m.partition} is committed, nothing from it on. "
            "Make the change compatible (add optional fields, widen types) and produce again, or ingest this "
            "topic into a new table (--table NAME)."
        )

    def _message(self, msg) -> Message:
        where = f"topic {msg.topic()} partition {msg.partition()} offset {msg.offset()}"
        key, value = msg.key(), msg.value()
        _, ts = msg.timestamp()
        return Message(msg.topic(), msg.partition(), msg.offset(), ts, key, value,
                       schema_id_of(key, where + " key"), schema_id_of(value, where + " value"),
                       self._headers(msg))

    def _headers(self, msg) -> tuple[tuple[str, bytes | None], ...] | None:
        """A message's headers, kept only where a dead letter may need them (errors.tolerance all)."""
        headers = msg.headers() if self.states[msg.topic()].tolerance == "all" else None
        return tuple(headers) if headers else None

    def _as_read(self, msg) -> Message:
        """A message that cannot be taken, as it arrived: the schema ids its headers give, if any."""
        ids = []
        for part, data in (("key", msg.key()), ("value", msg.value())):
            try:
                ids.append(schema_id_of(data, part))
            except DecodeError:
                ids.append(None)
        return Message(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1], msg.key(), msg.value(),
                       ids[0], ids[1], self._headers(msg))

    def _dead_letter(self, state: TopicState, letter: DeadLetter) -> None:
        """Hold a message for the dead-letter table; it commits with (before) the batch it was read in."""
        if not state.messages and not state.dead:
            state.first_at = time.monotonic()
        state.dead.append(letter)
        state.read_offsets[letter.message.partition] = letter.message.offset + 1

    # --- commit --------------------------------------------------------------

    def _fallback_type(self, topic: str, part: str) -> T.DataType:
        """A column type for a table first created from tombstones only: the subject's latest schema."""
        from zync.avro_types import spark_type

        try:
            latest = self.registry.client.get_latest_version(f"{topic}-{part}")
        except Exception:  # noqa: BLE001 - any registry answer but a schema means "unknown"
            raise ZyncError(f"cannot create the table of {topic}: its first records are tombstones and the "
                            f"registry has no subject {topic}-{part} to type the `{part}` column") from None
        return spark_type(json.loads(latest.schema.schema_str))

    def commit(self, state: TopicState) -> None:
        """Hand the topic's waiting messages to the background writer (after the batch in flight lands)."""
        if not state.messages and not state.dead:
            return
        if state.messages and state.key_type is None:
            state.key_type = self._fallback_type(state.topic, "key")
        if state.messages and state.value_type is None:
            state.value_type = self._fallback_type(state.topic, "value")
        batch = Batch(state, state.messages, state.key_type, state.value_type, state.changes,
                      self.decoder.prepare(state.messages) if state.messages else None, tuple(state.dead))
        state.messages, state.changes, state.dead = [], [], []
        self.writer.submit(self._write, batch)

    def commit_all(self) -> None:
        """Commit everything read so far and wait until it is in the tables."""
        for state in self.states.values():
            self.commit(state)
        self.writer.wait()

    def _write(self, batch: Batch) -> None:
        """One batch -> one Delta commit (runs on the writer thread)."""
        state, messages, table = batch.state, batch.messages, batch.state.table
        # Spark's active session is per JVM thread; without it this thread's catalog lookups
        # miss the Delta catalog (a by-name table then looks like an empty non-Delta one).
        self.spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(self.spark._jsparkSession)
        if batch.dead_letters:
            # Before the raw rows, never after: see ingest/dead_letters.py.
            last = batch.dead_letters[-1].message
            state.dead_table.append(batch.dead_letters, last.where)
            state.dead_lettered += len(batch.dead_letters)
            for letter in batch.dead_letters:
                p = letter.message.partition
                state.next_offsets[p] = max(state.next_offsets.get(p, 0), letter.message.offset + 1)
            self.progress.log("dead-letters", table=state.dead_table.label, records=len(batch.dead_letters),
                              first_error=batch.dead_letters[0].error[:300])
            batch = replace(batch, dead_letters=())
        if not messages:
            return
        if not self.shaper_sql and batch.changes and table.exists():
            table.evolve(batch.changes, batch.key_type, batch.value_type)
        try:
            frame = self.decoder.frame(messages, batch.key_type, batch.value_type, batch.prepared)
            if self.shaper_sql:
                frame.createOrReplaceTempView("batch")
                frame = self.spark.sql(self.shaper_sql)
                check_shaped_schema(frame, kafka_struct(), self.shaper_name)
            table.append(frame, f"the batch up to {messages[-1].where}")
        except BatchDecodeError as e:
            self._undecodable(batch, e)
            return
        except ZyncError:
            raise
        except Exception as e:  # noqa: BLE001 - Spark's from_avro failure: find the message
            if self.decoder.kind != "jvm" or "avro" not in str(e).lower():
                raise
            located = self.decoder.locate_error(messages)
            if located is None:
                raise
            self._undecodable(batch, located)
            return
        self._note_writer_schemas(state)
        for m in messages:
            state.next_offsets[m.partition] = max(state.next_offsets.get(m.partition, 0), m.offset + 1)
        state.committed += len(messages)
        self.progress.commit(table.label, len(messages), dict(state.next_offsets),
                             check_ms=round(table.check_seconds * 1000))

    def _undecodable(self, batch: Batch, first: BatchDecodeError) -> None:
        """A batch with messages that do not decode: stop at the first (errors.tolerance none), or write
        it again with every such message as a dead letter (all). Nothing of the batch is committed yet."""
        if batch.state.tolerance == "none":
            self._stop_at(batch, first)
        bad = {first.index: str(first)}
        start = first.index + 1
        while start < len(batch.messages):
            found = self.decoder.locate_error(batch.messages[start:])
            if found is None:
                break
            bad[start + found.index] = str(found)
            start += found.index + 1
        good = [m for i, m in enumerate(batch.messages) if i not in bad]
        letters = tuple(DeadLetter(batch.messages[i], error) for i, error in sorted(bad.items()))
        # The table was evolved for this batch already; the rows of its new fields come with the append.
        self._write(replace(batch, messages=good, changes=[], prepared=None, dead_letters=letters))

    def _stop_at(self, batch: Batch, e: BatchDecodeError) -> None:
        """Commit the messages before an undecodable one, then stop with its coordinates."""
        if e.index > 0:
            self._write(replace(batch, messages=batch.messages[:e.index], changes=[], prepared=None))
        raise DecodeError(
            f"{e}. Nothing from this message on is committed to {batch.state.table.label}. Fix or remove the "
            "producer of such messages; to go on past such messages, ingest with --errors-tolerance all "
            "(they land in a dead-letter table)."
        ) from None

    # --- the loop --------------------------------------------------------------

    def run(self, exit_after: float | None = None) -> int:
        """Ingest until `exit_after` passes with nothing new (None: until interrupted); return the records committed.

        The same Ingest may run again (zync run keeps one per topic): the first run resumes from
        the tables' offsets, later ones go on from what this one committed, which the tables'
        idempotent appends check (another writer meanwhile stops the run; make a new Ingest then).
        """
        committed_before = sum(s.committed for s in self.states.values())
        dead_before = sum(s.dead_lettered for s in self.states.values())
        for topic, state in self.states.items():
            resume = self._resume(state) if not self._resumed else state.next_offsets
            self.partitions[topic] = kafka_client.partitions(self.target, topic)
            self.progress.log("start", topic=topic, table=state.table.label, partitions=len(self.partitions[topic]),
                              resume_offsets=resume, decoder=self.decoder.kind, reader=self.reader)
        self._resumed = True
        options = self._spark_options() if self.reader == "spark" else None
        self.writer = OneInFlight()
        try:
            if options is None or not self._read_with_spark(options, exit_after):
                self._read_with_consumer(exit_after)
        finally:
            self.writer.close()
        total = sum(s.committed for s in self.states.values()) - committed_before
        dead = sum(s.dead_lettered for s in self.states.values()) - dead_before
        tables = ", ".join(s.table.label for s in self.states.values())
        offsets = "; ".join(f"{t}: " + ", ".join(f"[{p}] {o}" for p, o in sorted(s.next_offsets.items()))
                            for t, s in self.states.items())
        dead_text = f"; {dead:,} dead letters" if dead else ""
        self.progress.finish(f"{total:,} records into {tables} ({self.progress.commits} commits; "
                             f"next offsets {offsets or 'none'}{dead_text})")
        return total

    def waiting(self, consumer) -> dict[tuple[str, int], int]:
        """Messages Kafka holds past what this Ingest committed, per (topic, partition) that has any.

        Before its first run, every partition with messages counts (the tables' offsets are not read
        yet); a topic that does not exist yet has none.
        """
        found = {}
        for topic, state in self.states.items():
            entry = consumer.list_topics(topic, timeout=kafka_client.METADATA_TIMEOUT_S).topics.get(topic)
            if entry is None or entry.error is not None:
                continue  # not created yet: nothing waiting
            for p in sorted(entry.partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                           timeout=kafka_client.METADATA_TIMEOUT_S)
                start = max(state.next_offsets.get(p, 0), low) if self._resumed else low
                if high > start:
                    found[(topic, p)] = high - start
        return found

    def _read_with_consumer(self, exit_after: float | None) -> None:
        """The Python reader: consume, take message by message, commit in the background."""
        consumer = kafka_client.consumer(self.target, group=f"zync-ingest-{'-'.join(self.topics)}")
        assignment = [TopicPartition(topic, p, state.read_offsets.get(p, OFFSET_BEGINNING))
                      for topic, state in self.states.items()
                      for p in self.partitions[topic]]
        consumer.assign(assignment)
        # --exit-after counts idle time only once what the topics held at the start is read.
        behind = self._start_marks(consumer, assignment)
        last_message = time.monotonic()
        lag_at = 0.0
        try:
            while True:
                polled = consumer.consume(num_messages=min(self.consumer_batch_size, POLL_MESSAGES), timeout=0.2)
                now = time.monotonic()
                for msg in polled:
                    self._check(msg)
                    last_message = now
                    self._take(msg)
                    mark = behind.get((msg.topic(), msg.partition()))
                    if mark is not None and msg.offset() + 1 >= mark:
                        del behind[(msg.topic(), msg.partition())]
                self.progress.read(len(polled))
                for state in self.states.values():
                    if (state.messages or state.dead) and now - state.first_at >= self.max_interval:
                        self.commit(state)
                if self.progress.live and now - lag_at >= LAG_REFRESH_S:
                    lag_at = now
                    self._refresh_lag(consumer, assignment)
                if not polled:
                    self.commit_all()
                    if exit_after is not None and not behind and now - last_message >= exit_after:
                        break
        finally:
            # A batch handed to Spark lands (or fails) before the run ends; whatever was read
            # but not handed over is read again by the next run.
            try:
                self.writer.wait()
            finally:
                consumer.close()

    def _check(self, msg) -> None:
        kafka_client.is_record(self.target, msg)  # raises for an error; a partition's end passes

    # --- the Spark reader ------------------------------------------------------

    def _spark_options(self) -> dict[str, str] | None:
        """The target's connection for Spark's Kafka source, or None (and why) if it has no Java form."""
        try:
            options = java_kafka_options(self.target.kafka)
        except NoJavaEquivalent as e:
            self.progress.log("reader", reader="python",
                              why=f"Spark's Kafka source cannot be given {e}; the Python consumer reads instead")
            self.reader = "python"
            return None
        # As the Python consumer does (librdkafka's default): never a message of an aborted transaction.
        return {**options, "kafka.isolation.level": "read_committed"}

    def _watermarks(self, consumer) -> dict[str, tuple[dict[int, int], dict[int, int]]]:
        """(low, high) marks per partition of every topic; high is the last stable offset (read_committed)."""
        marks = {}
        for topic in self.states:
            low, high = {}, {}
            for p in self.partitions[topic]:
                low[p], high[p] = consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                                 timeout=kafka_client.METADATA_TIMEOUT_S)
            marks[topic] = (low, high)
        return marks

    def _read_with_spark(self, options: dict[str, str], exit_after: float | None) -> bool:
        """Plan batches and let Spark read them; False if Spark cannot read and the consumer must take over.

        A batch is read when it is full, when no new message arrived since the last look
        (nothing to wait for), or --max-interval after its first message was seen.
        """
        watcher = kafka_client.consumer(self.target, group=f"zync-ingest-{'-'.join(self.topics)}")
        try:
            marks = self._watermarks(watcher)
            # --exit-after counts idle time only once what the topics held at the start is read.
            behind = {(t, p): high for t, (lows, highs) in marks.items() for p, high in highs.items()
                      if high > max(self.states[t].read_offsets.get(p, 0), lows[p])}
            seen_high = {t: highs for t, (_, highs) in marks.items()}
            waiting_since: dict[str, float] = {}
            last_batch = time.monotonic()
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
                    if not (full or high == seen_high.get(topic) or now - first_seen >= self.max_interval):
                        continue
                    if not self._spark_batch(state, options, ranges):
                        return False
                    waiting_since.pop(topic, None)
                    worked, last_batch = True, time.monotonic()
                    for p, (_, end) in ranges.items():
                        if end >= behind.get((topic, p), end + 1):
                            del behind[(topic, p)]
                self.progress.read(0)
                if not worked:
                    if exit_after is not None and not behind and now - last_batch >= exit_after:
                        return True
                    time.sleep(WATERMARK_POLL_S)
                seen_high = {t: highs for t, (_, highs) in marks.items()}
                marks = self._watermarks(watcher)
        finally:
            watcher.close()

    def _note_writer_schemas(self, state: TopicState) -> None:
        """Record beside the table what its writer schemas say of its fields (after a commit): their
        Connect schema names, and the defaults of fields that some of the table's writers lack.

        The table's writer ids are kept only once a writer has defaults (Debezium's all do), so a
        table of plain schemas stays at one commit per batch."""
        if self.shaper_sql:
            return  # a shaper's columns are its own
        schemas: dict[str, dict[int, dict]] = {"key": {}, "value": {}}

        def schemas_of(part: str, schema_ids) -> None:
            for schema_id in sorted(set(schema_ids) - set(schemas[part])):
                try:
                    schemas[part][schema_id] = self.registry.schema(schema_id).schema
                except DecodeError:
                    pass  # deleted from the registry since: nothing to learn from it

        for part in ("key", "value"):
            schemas_of(part, state.accepted[part])
        names = {f"{part}.{path}" if path else part: name
                 for part in ("key", "value") for schema in schemas[part].values()
                 for path, name in connect_names(schema).items()}
        ids = None
        if any(field_defaults(schema) for part in schemas.values() for schema in part.values()):
            ids = state.table.writer_schema_ids()
            for part in ("key", "value"):
                ids[part] |= state.accepted[part]
                schemas_of(part, ids[part])
        defaults: dict[str, dict] = {}
        for part, by_id in schemas.items() if ids is not None else ():
            fields = {schema_id: field_paths(schema) for schema_id, schema in by_id.items()}
            for schema_id, schema in sorted(by_id.items()):  # in id order: the newest writer's default wins
                for path, default in field_defaults(schema).items():
                    lacking = sorted(i for i, paths in fields.items() if path not in paths)
                    if lacking:
                        defaults[f"{part}.{path}"] = {"default": default, "absentIn": lacking}
        state.table.note_writer_schemas(ids, names, defaults)

    def _writers(self, state: TopicState, part: str) -> tuple[list[WriterType], T.DataType | None, list[Change]]:
        """The writer schemas a batch may meet in `part`, the column type that holds them all, and the
        table changes that type needs.

        The candidates are the ids this run already took and the versions of the topic's subject
        (TopicNameStrategy), in version order, as long as each evolves the type compatibly: a
        version that does not is left out, so its messages fail the Spark job and the consumer
        finds the first of them. A version registered but not yet produced evolves the table too.
        """
        ids = sorted(state.accepted[part])
        subject = f"{state.topic}-{part}"
        try:
            versions = self.registry.client.get_versions(subject)
        except Exception:  # noqa: BLE001 - no such subject: only the ids already taken
            versions = []
        for version in versions:
            found = self.registry.client.get_version(subject, version).schema_id
            if found not in ids:
                ids.append(found)
        current = state.key_type if part == "key" else state.value_type
        writers, changes = [], []
        for schema_id in ids:
            spark_type = self.decoder.spark_type(schema_id)
            if current is None or isinstance(current, T.NullType):
                merged = spark_type
            else:
                try:
                    merged, more = merge(current, spark_type, (part,))
                except IncompatibleSchemaError:
                    break
                changes += more
            current = merged
            writers.append(WriterType(schema_id, self.registry.schema(schema_id).schema, spark_type))
        return writers, current, changes

    def _spark_batch(self, state: TopicState, options: dict[str, str], ranges: dict[int, tuple[int, int]]) -> bool:
        """One planned batch: Spark reads, decodes and commits it; a batch it cannot take goes to the consumer.

        False if Spark could not read at all (the consumer then reads the rest of the run).
        """
        key_writers, key_type, key_changes = self._writers(state, "key")
        value_writers, value_type, value_changes = self._writers(state, "value")
        key_type = key_type or self._fallback_type(state.topic, "key")
        value_type = value_type or self._fallback_type(state.topic, "value")
        table = state.table
        where = f"the batch of {state.topic} up to offsets " + ", ".join(
            f"[{p}] {end - 1}" for p, (_, end) in sorted(ranges.items()))
        try:
            changes = key_changes + value_changes
            if not self.shaper_sql and changes and table.exists():
                table.evolve(changes, key_type, value_type)
            raw = kafka_batch(self.spark, options, state.topic, ranges, key_writers, value_writers)
            known = {p: {o for o in state.known_dead.get(p, ()) if start <= o < end}
                     for p, (start, end) in ranges.items()}
            if any(known.values()):  # dead-lettered before a kill stopped the raw commit after it
                raw = raw.where(~coordinates(known))
            frame = decode_batch(raw, key_writers, value_writers, key_type, value_type)
            if self.shaper_sql:
                frame.createOrReplaceTempView("batch")
                frame = self.spark.sql(self.shaper_sql)
                check_shaped_schema(frame, kafka_struct(), self.shaper_name)
            table.append(frame, where)
        except (Py4JJavaError, PySparkException) as e:
            text = str(e)
            data_problem = UNDECODABLE in text or MALFORMED_AVRO in text
            lines = text.splitlines() or [type(e).__name__]
            cause = next((line[line.find(m):] for line in lines for m in (UNDECODABLE, MALFORMED_AVRO)
                          if m in line), lines[-1])
            self.progress.log("spark-read-failed", topic=state.topic, ranges=ranges, error=cause.strip()[:500],
                              then="the consumer reads this batch" if data_problem
                              else "the consumer reads from here on")
            if not data_problem:
                return False
            self._consume_range(state, ranges)
            self.batches_read["consumer"] += 1
            return True
        if not self.shaper_sql:
            state.key_type, state.value_type = key_type, value_type
        for part, writers in (("key", key_writers), ("value", value_writers)):
            state.accepted[part].update(w.schema_id for w in writers)
        self._note_writer_schemas(state)
        rows = table.last_rows if table.last_rows is not None else sum(e - s for s, e in ranges.values())
        for p, (_, end) in ranges.items():
            state.next_offsets[p] = state.read_offsets[p] = end
        state.committed += rows
        self.batches_read["spark"] += 1
        self.progress.records += rows
        self.progress.commit(table.label, rows, dict(state.next_offsets),
                             check_ms=round(table.check_seconds * 1000))
        return True

    def _consume_range(self, state: TopicState, ranges: dict[int, tuple[int, int]]) -> None:
        """Read exactly the planned offsets with the Python consumer and take them message by message."""
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
            self.commit_all()
        finally:
            consumer.close()
        for p, (_, end) in ranges.items():
            state.read_offsets[p] = max(state.read_offsets.get(p, 0), end)
            state.next_offsets[p] = max(state.next_offsets.get(p, 0), end)

    def _take(self, msg) -> None:
        state = self.states[msg.topic()]
        if msg.offset() in state.known_dead.get(msg.partition(), ()):
            # Dead-lettered before a kill stopped the raw commit after it: taken already.
            state.read_offsets[msg.partition()] = msg.offset() + 1
            return
        try:
            m = self._message(msg)
        except DecodeError as e:
            if state.tolerance == "all":
                return self._dead_letter(state, DeadLetter(self._as_read(msg), str(e)))
            self.commit_all()
            raise DecodeError(f"{e} Nothing from this message on is committed; to go on past such messages, "
                              "ingest with --errors-tolerance all (they land in a dead-letter table).") from None
        try:
            self._accept_schema(state, "key", m.key_schema_id, m)
            self._accept_schema(state, "value", m.value_schema_id, m)
        except IncompatibleChangeError as e:
            if state.tolerance == "all":
                return self._dead_letter(state, DeadLetter(m, str(e)))
            self.commit_all()
            raise
        except DecodeError as e:  # its schema id is not in the registry
            if state.tolerance == "all":
                return self._dead_letter(state, DeadLetter(m, f"{m.where}: {e}"))
            self.commit_all()
            raise DecodeError(f"{m.where}: {e}") from None
        if not state.messages and not state.dead:
            state.first_at = time.monotonic()
        state.messages.append(m)
        state.read_offsets[m.partition] = m.offset + 1
        for part, sid in (("key", m.key_schema_id), ("value", m.value_schema_id)):
            if sid is not None:
                state.last_schema[part] = sid
        if len(state.messages) + len(state.dead) >= self.consumer_batch_size:
            self.commit(state)

    def _start_marks(self, consumer, assignment: list[TopicPartition]) -> dict[tuple[str, int], int]:
        """High-water marks at the start of the partitions that have messages left to read."""
        marks = {}
        for tp in assignment:
            low, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition),
                                                       timeout=kafka_client.METADATA_TIMEOUT_S)
            start = low if tp.offset < 0 else tp.offset
            if high > start:
                marks[(tp.topic, tp.partition)] = high
        return marks

    def _refresh_lag(self, consumer, assignment: list[TopicPartition]) -> None:
        for tp in assignment:
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=0.5)
            except Exception:  # noqa: BLE001 - lag is cosmetic; a slow broker must not stop ingest
                continue
            position = self.states[tp.topic].read_offsets.get(tp.partition, 0)
            self.progress.lag[(tp.topic, tp.partition)] = max(0, high - position)

    # --- replay --------------------------------------------------------------------

    def replay_dead_letters(self) -> tuple[int, int]:
        """Take the dead letters that now can be taken (a schema registered since, say) into the raw table
        at their own coordinates, and remove them from the dead-letter table; (replayed, still dead).

        Exactly once: the raw rows land first, in one idempotent commit (a running ingest of the table
        stops at its next commit, as with any second writer), then one delete; a replay killed between
        the two finds its rows in the raw table next time and only deletes them. A message that still
        cannot be taken stays, with its first error; nothing is dead-lettered twice.
        """
        replayed = still = 0
        for topic, state in self.states.items():
            state.tolerance = "none"  # a replay fails whole rather than dead-letter again
            self._resume(state)
            if not state.dead_table.exists():
                self.progress.log("replay", topic=topic, note=f"no dead-letter table {state.dead_table.label}")
                continue
            rows = state.dead_table.frame(topic).orderBy("kafka.partition", "kafka.offset").collect()
            wanted: dict[int, set[int]] = {}
            for row in rows:
                wanted.setdefault(row["kafka"]["partition"], set()).add(row["kafka"]["offset"])
            landed: set[tuple[int, int]] = set()
            if rows and state.table.exists():
                from pyspark.sql import functions as F

                landed = {(r["partition"], r["offset"]) for r in self.spark.table(state.table.sql_name)
                          .where((F.col("kafka.topic") == F.lit(topic)) & coordinates(wanted))
                          .select("kafka.partition", "kafka.offset").collect()}
            taken, failing = [], []
            for row in rows:
                m = stored_message(row)
                if (m.partition, m.offset) in landed:
                    continue  # a replay killed between its two commits: only the delete is left
                try:
                    m = replace(m, key_schema_id=schema_id_of(m.key, m.where + " key"),
                                value_schema_id=schema_id_of(m.value, m.where + " value"))
                    self._accept_schema(state, "key", m.key_schema_id, m)
                    self._accept_schema(state, "value", m.value_schema_id, m)
                    located = self.decoder.locate_error([m])
                    if located is not None:
                        raise located
                except DecodeError as e:  # IncompatibleChangeError is a ZyncError, not a DecodeError
                    failing.append(f"{m.where}: {e}")
                    continue
                except IncompatibleChangeError as e:
                    failing.append(str(e).split("\n")[0])
                    continue
                taken.append(m)
            if taken:
                state.messages = taken
                self.commit(state)
                self.writer.wait()
            done = {*landed, *((m.partition, m.offset) for m in taken)}
            if done:
                by_partition: dict[int, set[int]] = {}
                for p, o in done:
                    by_partition.setdefault(p, set()).add(o)
                state.dead_table.remove(topic, by_partition)
            replayed += len(taken)
            still += len(failing)
            self.progress.log("replay", topic=topic, table=state.table.label, replayed=len(taken),
                              removed=len(done), still_dead=len(failing),
                              first_still_dead=failing[0][:300] if failing else None)
        self.writer.close()
        return replayed, still
