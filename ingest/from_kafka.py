"""`zync from-kafka`: topics -> raw Delta tables, exactly once; `Ingest` puts the parts together.

The resume point is the table itself (its largest offset per topic-partition);
see ingest/table.py for why a crash or a second ingest never duplicates.
A message that cannot be taken (not Avro, an incompatible schema) stops the
run after committing the messages read before it, and nothing after it; with
errors.tolerance `all` it goes to the table's dead-letter table instead
(ingest/dead_letters.py, which says how that stays exactly once) and ingest goes on.

The parts, one job each:
- ingest/topic.py: one topic's state (tables, offsets, what waits for a commit);
- ingest/schemas.py: one topic's key/value types as writer schemas arrive;
- ingest/spark_reader.py and ingest/consumer_reader.py: the two readers, one
  interface (ingest/reader.py); ingest/fallback.py: when Spark's hands over;
- ingest/commit.py: the consumer's background commits; ingest/replay.py: dead letters replayed.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from ingest.commit import Committer
from ingest.consumer_reader import ConsumerReader
from ingest.dead_letters import DeadLetterTable, check_tolerance
from ingest.decode import Decoder
from ingest.fallback import SparkCannotRead, spark_options
from ingest.reader import Reader
from ingest.replay import replay_dead_letters
from ingest.schemas import SchemaTracker, WriterSchemas
from ingest.spark_reader import SparkReader
from ingest.table import RawTable
from ingest.topic import TopicState
from zync import kafka_client
from zync.config import Target
from zync.errors import ZyncError
from zync.ingest_options import DEFAULT_TOLERANCE, configured_tolerance
from zync.progress import Progress
from zync.shaper import INGEST, Shaper
from zync.spark import spark_session
from zync.tables import qualified, raw_table_name
from zync.wire import Registry

# Batches are large because each costs seconds whatever its size. The consumer holds the
# messages of two batches in Python (1M events: 10 commits of 100k took 80 s, 4 of 250k 44 s).
# Spark's reader holds none: its tasks stream their offset ranges into the table, so its
# batches are larger still; a cold JVM takes a few jobs to warm up (1M events: 4 jobs of 250k
# 52 s, one of 1M 38 s; bench/ingest_throughput.py).
DEFAULT_BATCH_SIZE = {"spark": 1_000_000, "python": 250_000}
DEFAULT_MAX_INTERVAL_S = 5.0
READERS = ("spark", "python")
# A kept Ingest (zync run) reads a backlog up to this many records with its warm consumer, even when
# Spark is its reader: a Spark job costs ~0.7 s however few records it reads, the consumer
# milliseconds, and a whole database's cycle pays that once per changed table (bench/wide.py).
SMALL_BACKLOG = 10_000


def ingest_progress(live: bool | None = None, quiet: bool = False, **options) -> Progress:
    """The progress of `from-kafka` (zync run passes quiet=True: it reports its stages itself)."""
    return Progress("from-kafka", live=live, quiet=quiet, **options)


class Ingest:
    def __init__(self, target: Target, topics: list[str], table: str | None = None,
                 shaper: Path | None = None, batch_size: int | None = None,
                 max_interval: float = DEFAULT_MAX_INTERVAL_S, location: str | None = None,
                 reader: str = "spark", progress: Progress | None = None,
                 errors_tolerance: str | None = None, spark=None, python_rows: bool = True):
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
        self.shaper = Shaper.load(shaper, INGEST) if shaper else None
        self.max_interval = max_interval
        self.registry = Registry(target.schema_registry)
        # zync run gives each topic's Ingest a session of its own on the one engine (SparkSession.newSession:
        # the same SparkContext and catalog, its own SQL settings), so that the settings a write sets
        # around itself (ingest/table.py) never meet those of another topic's write under way.
        self.spark = spark or spark_session(target)
        # Delta rebuilds a table's state (for the resume point's txn version) in this many
        # tasks; its default of 50 is for clusters and costs seconds per table here.
        self.spark.conf.set("spark.databricks.delta.snapshotPartitions", "2")
        self.reader = reader
        self.batch_size = batch_size or DEFAULT_BATCH_SIZE[reader]
        self.progress = progress or ingest_progress()
        self._resumed = False  # a kept Ingest (zync run) resumes from its tables once, then from its own state
        self.partitions: dict[str, list[int]] = {}  # per topic, as the run found them at its start
        # Batches Spark read, and batches it could not take that the consumer read instead.
        self.batches_read = {"spark": 0, "consumer": 0}
        writer_schemas = WriterSchemas(self.spark, self.registry)
        self.states: dict[str, TopicState] = {}
        for topic in topics:
            raw = (RawTable(self.spark, location=location) if location
                   else RawTable(self.spark, name=qualified(target, table or raw_table_name(topic)).replace("`", "")))
            # The flag wins over the project's per-topic setting (models/raw/__sources.yml).
            tolerance = check_tolerance(errors_tolerance or configured_tolerance(topic) or DEFAULT_TOLERANCE,
                                        f"topic {topic} (models/raw/__sources.yml)")
            self.states[topic] = TopicState(
                topic, raw, DeadLetterTable(self.spark, raw),
                SchemaTracker(topic, writer_schemas, raw, shaped=self.shaper is not None), tolerance)
        self.decoder = Decoder(self.spark, self.registry, writer_schemas)
        shape = self.shaper.apply if self.shaper else None
        # python_rows: small batches decoded and written without a Spark job where that gives the same
        # rows (ingest/commit.py); False sends every batch through Spark (benchmarks compare the two).
        self.committer = Committer(self.spark, self.states, self.decoder, self.progress, shape, python_rows)
        # Messages the consumer holds in Python: also when it reads a batch Spark could not take.
        self.consumer = ConsumerReader(target, self.states, self.partitions, self.committer, self.progress,
                                       min(self.batch_size, DEFAULT_BATCH_SIZE["python"]), max_interval)

    def _spark_reader(self) -> SparkReader | None:
        """Spark's reader for this run, or None (and why, in the log) if the profile has no Java form."""
        try:
            options = spark_options(self.target.kafka)
        except SparkCannotRead as e:
            self.progress.log("reader", reader="python", why=str(e))
            self.reader = "python"
            return None
        return SparkReader(self.spark, self.target, self.states, self.partitions, options, self.consumer,
                           self.progress, self.batch_size, self.max_interval, self.batches_read,
                           self.committer.shape)

    def run(self, exit_after: float | None = None, marks: kafka_client.Watermarks | None = None) -> int:
        """Ingest until `exit_after` passes with nothing new (None: until interrupted); return the records committed.

        The same Ingest may run again (zync run keeps one per topic): the first run resumes from
        the tables' offsets, later ones go on from what this one committed, which the tables'
        idempotent appends check (another writer meanwhile stops the run; make a new Ingest then).
        `marks`: the topics' watermarks, if the caller has them (kafka_client.watermarks): their
        partitions need no metadata request, and a small backlog behind them is read by the warm
        consumer (SMALL_BACKLOG).
        """
        committed_before = sum(s.committed for s in self.states.values())
        dead_before = sum(s.dead_lettered for s in self.states.values())
        resumes = {topic: state.resume() if not self._resumed else state.next_offsets
                   for topic, state in self.states.items()}
        self._resumed = True
        # Counted from the resume points just read: a new table's first batches (a database's
        # bootstrap, a topic discovered while running) and a restart's small backlog take the
        # consumer too, and with it the Python write of a small batch (ingest/commit.py).
        small = exit_after == 0 and marks is not None and sum(self.waiting(None, marks).values()) <= SMALL_BACKLOG
        for topic, state in self.states.items():
            known = sorted(p for t, p in (marks or {}) if t == topic)
            self.partitions[topic] = known or kafka_client.partitions(self.target, topic)
            self.progress.log("start", topic=topic, table=state.table.label, partitions=len(self.partitions[topic]),
                              resume_offsets=resumes[topic], reader="python" if small else self.reader)
        reader: Reader | None = self._spark_reader() if self.reader == "spark" and not small else None
        keep = marks is not None  # zync run: the consumer stays warm for the next cycle's run
        self.committer.start()
        try:
            try:
                if reader is None:
                    self.consumer.read(exit_after, keep=keep, marks=marks)
                else:
                    reader.read(exit_after)
            except SparkCannotRead:  # logged where ingest/fallback.py decided it
                self.consumer.read(exit_after, keep=keep, marks=marks)
        finally:
            self.committer.close()
        total = sum(s.committed for s in self.states.values()) - committed_before
        dead = sum(s.dead_lettered for s in self.states.values()) - dead_before
        tables = ", ".join(s.table.label for s in self.states.values())
        offsets = "; ".join(f"{t}: " + ", ".join(f"[{p}] {o}" for p, o in sorted(s.next_offsets.items()))
                            for t, s in self.states.items())
        dead_text = f"; {dead:,} dead letters" if dead else ""
        self.progress.finish(f"{total:,} records into {tables} ({self.progress.commits} commits; "
                             f"next offsets {offsets or 'none'}{dead_text})", with_rate=True)
        return total

    def close(self) -> None:
        """Close what a run kept open for the next (the warm consumer of zync run's small backlogs)."""
        self.consumer.close()

    def waiting(self, consumer: Consumer | None, marks: kafka_client.Watermarks | None = None
                ) -> dict[tuple[str, int], int]:
        """Messages Kafka holds past what this Ingest committed, per (topic, partition) that has any.

        Before its first run, every partition with messages counts (the tables' offsets are not read
        yet); a topic that does not exist yet has none. `marks`: the partitions' watermarks, if the
        caller has them (kafka_client.watermarks); else they are asked of the broker here.
        """
        if marks is None:
            assert consumer is not None, "waiting() needs a consumer or the marks"
            marks = {}
            for topic in self.states:
                entry = consumer.list_topics(topic, timeout=kafka_client.METADATA_TIMEOUT_S).topics.get(topic)
                if entry is None or entry.error is not None:
                    continue  # not created yet: nothing waiting
                for p in entry.partitions:
                    marks[(topic, p)] = consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                                       timeout=kafka_client.METADATA_TIMEOUT_S)
        found = {}
        for (topic, p), (low, high) in sorted(marks.items()):
            state = self.states.get(topic)
            if state is None:
                continue
            start = max(state.next_offsets.get(p, 0), low) if self._resumed else low
            if high > start:
                found[(topic, p)] = high - start
        return found

    def replay_dead_letters(self) -> tuple[int, int]:
        """Take the dead letters that now can be taken (a schema registered since, say) into the raw table
        at their own coordinates, and remove them from the dead-letter table; (replayed, still dead)."""
        replayed = still = 0
        self.committer.start()
        try:
            for state in self.states.values():
                state.resume()
                taken, failing = replay_dead_letters(self.spark, state, self.decoder, self.committer, self.progress)
                replayed += taken
                still += failing
        finally:
            self.committer.close()
        return replayed, still
