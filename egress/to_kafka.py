"""zync's egress algorithm: align the table's output offsets with the topic's.

Read the topic's high-water mark, then produce the out rows with
kafka.offset >= it, in order, with an idempotent producer and no transactions
(their markers would take offsets). Every delivery report must carry the
row's own offset; anything else means another writer, and egress stops.
A restart resumes exactly where Kafka stands.

Two egresses of one output topic take turns, on one machine or on several
(a second `zync run` of the project, a `zync to-kafka` beside it or on
another machine): a pass, from reading the high-water mark to its last
delivery report, holds the topic's turn, so the second reads the mark after
the first's records and publishes only the rows past them. Without it both
read the same mark, both produce the rows past it, and the second's records
are duplicates that stay. The turn is two locks, taken in this order:

- a file lock of the topic on this machine ($ZYNC_EGRESS_LOCK_DIR, default
  <temp>/zync-egress, named by the brokers and the topic): egresses of one
  machine wait on it without asking the database, and the kernel releases it
  when its holder dies, kill -9 included;
- a lease of the topic in the catalog's database (egress/lease.py), named by
  the Kafka cluster's id and the topic, which egresses of every machine
  share: renewed while the pass runs, taken over once its holder has not
  renewed it for its TTL ($ZYNC_EGRESS_LEASE_TTL, 30 s), at once by a
  process that holds the file lock its dead holder held. A pass that loses
  its lease stops producing before its next record.

The rows are encoded in the JVM (egress.encode) by one Spark query, in
partitions of `batch_size` offsets, and streamed to Python as Arrow one
partition after another in offset order (egress.stream), so memory follows
the batch size, not the table.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from zync import kafka_client
from zync.config import Target
from zync.delta_metadata import latest_version, table_location
from zync.envelope import check_envelope
from zync.errors import ZyncError
from zync.progress import Progress
from zync.shaper import EGRESS, Shaper
from zync.spark import spark_session
from zync.tables import qualified
from zync.transactions import OUTPUT_TRANSACTION_COLUMN
from zync.wire import DecodeError, Registry

from egress.delivery import DeliveryCheck, OffsetMismatchError, produce_batch
from egress.encode import key_column, value_column
from egress.lease import EgressBusyError, EgressLeaseLostError, HeldLease, Leases
from egress.lease import take as take_lease
from egress.schemas import TopicSchemas
from egress.stream import OffsetGapError, arrow_batches, in_offset_order, partitioned_by_offset

__all__ = ["Egress", "EgressBusyError", "EgressLeaseLostError", "OffsetMismatchError"]

DEFAULT_BATCH_SIZE = 100_000
FOLLOW_POLL_S = 2.0
LOCK_DIR_ENV = "ZYNC_EGRESS_LOCK_DIR"
LOCK_WAIT_S = 300.0  # a pass of another egress ends within its flush's 60 s after its last batch
LOCK_POLL_S = 0.1


def lock_path(bootstrap_servers: str, topic: str) -> Path:
    """The lock file of one output topic of one Kafka cluster, the same for every process of the machine."""
    folder = Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "zync-egress")
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(folder, 0o1777)  # every user's egress takes its turn there, as in /tmp
        except OSError:
            pass
    servers = ",".join(sorted(s.strip() for s in bootstrap_servers.split(",") if s.strip()))
    return folder / (hashlib.sha256(f"{servers}\n{topic}".encode()).hexdigest()[:32] + ".lock")


class Turn:
    """A pass's turn on its topic: whether it still holds it (its lease, when it has one)."""

    def __init__(self, lease: HeldLease | None = None):
        self.lease = lease

    def held(self) -> bool:
        return self.lease is None or self.lease.held()

    def lapsed(self) -> bool:
        """The fence a pass checks before producing: True once the turn is no longer held."""
        return self.lease is not None and not self.lease.held()

    def why_lost(self) -> str:
        return self.lease.why_lost() if self.lease is not None else ""


@contextmanager
def topic_turn(bootstrap_servers: str, topic: str, stop: threading.Event | None = None,
               wait_s: float = LOCK_WAIT_S, leases: Leases | None = None,
               cluster: str | None = None) -> Iterator[Turn]:
    """Hold the topic's turn: wait (up to `wait_s`) for another egress's pass to end.

    The file lock of this machine, then, with `leases`, the lease of the topic on the Kafka cluster
    `cluster` (its id) that egresses of every machine share.
    """
    path = lock_path(bootstrap_servers, topic)
    with open(path, "a") as handle:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline or (stop is not None and stop.is_set()):
                    raise EgressBusyError(
                        f"another egress of {topic} on this machine has been publishing for over {wait_s:.0f} s "
                        f"(it holds {path}); egress tries again") from None
                time.sleep(LOCK_POLL_S)
        try:
            if leases is None:
                yield Turn()
                return
            lease = take_lease(leases, topic, cluster or bootstrap_servers, path, deadline, stop)
            try:
                yield Turn(lease)
            finally:
                lease.release()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Pending:
    """What one pass publishes: output offsets [start, end) of the topic."""

    start: int
    end: int


def _as_bytes(column) -> list[bytes | None]:
    """An Arrow binary column as Python bytes (None for nulls).

    to_numpy builds the bytes objects in C; to_pylist goes through an Arrow
    scalar per value and cost egress a second per 250,000 records.
    """
    return column.to_numpy(zero_copy_only=False).tolist()


class Egress:
    def __init__(self, target: Target, table: str, topic: str | None = None, shaper: Path | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE):
        if batch_size < 1:
            raise ZyncError(f"--batch-size must be at least 1, not {batch_size}")
        self.target = target
        self.table = qualified(target, table)
        self.batch_size = batch_size
        self.spark = spark_session(target)
        if not self.spark.catalog.tableExists(self.table.replace("`", "")):
            raise ZyncError(f"table {self.table} does not exist: run `dbt run` (or check --table)")
        check_envelope(self.spark.table(self.table).schema, self.table, kind="output")
        self.topic = topic or self._only_topic()
        self.shaper = Shaper.load(shaper, EGRESS) if shaper else None
        self.schemas = TopicSchemas(Registry(target.schema_registry), self.topic)
        self._stop = threading.Event()

    # --- reading the table ------------------------------------------------

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

    def _rows_from(self, start: int):
        from pyspark.sql import functions as F

        rows = self._out_rows().where((F.col("kafka.topic") == self.topic) & (F.col("kafka.offset") >= start))
        if self.shaper:
            rows = self.shaper.apply(rows)
        return rows

    # --- one pass -----------------------------------------------------------

    def _plan(self, rows, high: int) -> tuple[Pending, list[tuple[list[str] | None, bool]]]:
        """One job over the rows from high - 1: the offsets to publish and the field sets present."""
        from pyspark.sql import functions as F

        found = (rows.groupBy(F.col("fields") if "fields" in rows.columns else F.lit(None).alias("fields"),
                              F.col("value").isNull().alias("tombstone"))
                 .agg(F.max("kafka.offset").alias("last")).collect())
        if not found:
            if high == 0:
                return Pending(0, 0), []
            raise ZyncError(
                f"topic {self.topic} holds {high} records but table {self.table} has no out row at offset "
                f"{high - 1}: another writer produced to the topic, or the table was rebuilt. Egress never "
                "rewrites a topic: publish to a new topic, or restore the table."
            )
        end = max(r["last"] for r in found) + 1
        return Pending(high, end), [(r["fields"], r["tombstone"]) for r in found]

    def _encoded(self, rows, groups: list[tuple[list[str] | None, bool]]):
        """rows -> DataFrame(offset, topic, key bytes, value bytes), a schema registered per shape."""
        from pyspark.sql import functions as F

        types = {f.name: f.dataType for f in rows.schema.fields}
        value_groups, shapes = [], {}
        for fields, tombstone in groups:
            if tombstone:
                continue
            shape = self.schemas.value(types["value"], tuple(fields) if fields is not None else None)
            shapes[shape.fields] = shape
            value_groups.append((list(fields) if fields is not None else None, shape.fields))
        key_shape = None if types["key"].typeName() == "void" else self.schemas.key(types["key"])
        # An output taking whole source transactions carries each row's (zync/transactions.py).
        transaction = [F.col(OUTPUT_TRANSACTION_COLUMN).alias("t")] if OUTPUT_TRANSACTION_COLUMN in rows.columns else []
        return rows.select(F.col("kafka.offset").alias("offset"), F.col("kafka.topic").alias("topic"),
                           key_column(rows, key_shape).alias("k"),
                           value_column(rows, shapes, value_groups).alias("v"), *transaction)

    def _check_last_published(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        """The topic's last record must be the table's row at that offset, or someone else wrote it."""
        from confluent_kafka import TopicPartition

        consumer = kafka_client.consumer(self.target, group="zync-egress-check")
        try:
            consumer.assign([TopicPartition(self.topic, 0, offset)])
            msg = None
            deadline = time.monotonic() + kafka_client.METADATA_TIMEOUT_S
            while msg is None and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error():
                    raise ZyncError(f"reading {self.topic}@{offset}: {msg.error()}")
        finally:
            consumer.close()
        if msg is None:
            raise ZyncError(f"cannot read {self.topic}@{offset} to check it (timed out)")
        registry = self.schemas.registry
        where = f"{self.topic}@{offset}"
        try:
            theirs = (registry.decode(msg.key(), where)[1], registry.decode(msg.value(), where)[1])
        except DecodeError:
            theirs = ("<not Avro in the wire format>", None)
        ours = (registry.decode(key, where)[1], registry.decode(value, where)[1])
        if theirs != ours:
            raise OffsetMismatchError(
                f"{self.topic}: the record at offset {offset} is not the table's out row {offset}: another process "
                "is writing to this topic. Stop it (one `zync to-kafka` per topic, and nothing else may produce "
                "to an output topic); the topic must then be rebuilt from the table (a new topic)."
            )

    def _after_last_published(self, batches, start: int):
        """`batches` from offset start - 1 on, less that first row, once it is found to be the topic's
        last record (_check_last_published); from offset 0, as they are.

        The row comes with the pass's own Spark job: a query of its own for it cost every pass a
        job and its planning (~0.4 s of a pass of a few hundred rows).
        """
        checked = start == 0
        try:
            for batch in batches:
                if not checked:
                    self._check_last_published(start - 1, batch.column("k")[0].as_py(),
                                               batch.column("v")[0].as_py())
                    checked = True
                    batch = batch.slice(1)
                    if batch.num_rows == 0:
                        continue
                yield batch
        finally:
            batches.close()  # the Spark job's partitions not fetched yet

    def _not_contiguous(self, found: str) -> str:
        return (f"table {self.table} does not hold exactly one out row per offset of {self.topic} ({found}). "
                "Output offsets must be contiguous from 0: "
                + ("the shaper must keep every row and its kafka fields" if self.shaper
                   else "the table is damaged, or was written by something other than the ETL"))

    def _shaper_blame(self, what: str) -> str:
        return (f"the shaper {self.shaper.name} {what}: egress needs each row's kafka fields as the table "
                "has them (they are the output offsets)")

    def _batches(self, encoded, pending: Pending):
        """Arrow batches of (offset, topic, k, v) for every pending offset, in order, from one Spark job."""
        import pyarrow.compute as pc

        ordered = partitioned_by_offset(encoded, pending.start, pending.end, self.batch_size)
        try:
            for batch in in_offset_order(arrow_batches(ordered), pending.start, pending.end):
                if pc.any(pc.not_equal(batch.column("topic"), self.topic)).as_py():
                    raise ZyncError(self._shaper_blame("changed kafka.topic"))
                yield batch
        except OffsetGapError as gap:
            raise ZyncError(self._not_contiguous(str(gap))) from None

    @cached_property
    def _leases(self) -> Leases:
        return Leases(self.spark)

    @cached_property
    def _cluster(self) -> str:
        """The Kafka cluster's id, which names it whatever address each machine reaches it by."""
        return kafka_client.cluster_id(self.target)

    def publish_once(self, progress: Progress, published: int = 0) -> int:
        """Produce every out row at or past the topic's high-water mark; return how many."""
        with topic_turn(str(self.target.kafka.get("bootstrap.servers", "")), self.topic, self._stop,
                        leases=self._leases, cluster=self._cluster) as turn:
            return self._publish_once(progress, published, turn)

    def _publish_once(self, progress: Progress, published: int, turn: Turn | None = None) -> int:
        turn = turn or Turn()
        kafka_client.ensure_topic(self.target, self.topic)
        parts = kafka_client.partitions(self.target, self.topic)
        if parts != [0]:
            raise ZyncError(f"output topic {self.topic} has partitions {parts}: zync's output offsets align "
                            "with a single-partition topic; publish to a topic with one partition")
        high = kafka_client.high_water_marks(self.target, self.topic)[0]
        rows = self._rows_from(max(high - 1, 0))
        pending, groups = self._plan(rows, high)
        if pending.end <= pending.start:
            return 0
        encoded = self._encoded(rows, groups)
        check = DeliveryCheck(self.topic, pending.start)
        producer = kafka_client.producer(self.target, on_delivery=check)
        count = 0
        # From the topic's last record on: the same job checks it before anything is produced.
        batches = self._after_last_published(
            self._batches(encoded, Pending(max(pending.start - 1, 0), pending.end)), pending.start)
        fenced = False
        try:
            # Spark computes the next partition while this thread produces the current one.
            for batch in batches:
                def shown(n: int, base: int = published + count, lo: int = pending.start + count) -> None:
                    progress.update(base + n, f"-> {self.topic}@{lo + n}, {pending.end - lo - n:,} to go")

                if turn.lapsed():
                    fenced = True
                    break
                transactions = batch.column("t").to_pylist() if "t" in batch.schema.names else None
                count += produce_batch(producer, self.topic, _as_bytes(batch.column("k")),
                                       _as_bytes(batch.column("v")), check, shown, fenced=turn.lapsed,
                                       transactions=transactions)
                if turn.lapsed():
                    fenced = count < pending.end - pending.start
                if check.failed or self._stop.is_set() or fenced:
                    break
        finally:
            batches.close()
            if fenced:
                # Records still queued must not leave after another egress's turn began.
                producer.purge(in_queue=True, in_flight=False)
            remaining = producer.flush(60)
        if fenced and check.mismatch is None:
            raise EgressLeaseLostError(
                f"egress of {self.topic} lost its turn mid-pass ({turn.why_lost()}) and stopped producing, "
                "its unsent records dropped; egress tries again, from the topic's high-water mark")
        check.raise_if_failed()
        if remaining:
            raise ZyncError(f"{remaining} records to {self.topic} were still unconfirmed after 60s; "
                            "run again: egress resumes at the topic's high-water mark")
        progress.update(published + count, f"-> {self.topic}@{pending.start + count}")
        return count

    @cached_property
    def _location(self) -> str:
        return table_location(self.spark, self.table)

    def _table_version(self) -> int:
        return latest_version(self.spark, self._location)[0]

    def stop(self) -> None:
        """Ask a running (or following) egress to stop after the batch in flight."""
        self._stop.set()

    def run(self, follow: bool = False) -> int:
        progress = Progress("to-kafka")
        version = self._table_version() if follow else None
        published = self.publish_once(progress, 0)
        while follow and not self._stop.wait(FOLLOW_POLL_S):
            latest = self._table_version()
            if latest != version:
                version = latest
                published += self.publish_once(progress, published)
        progress.finish(f"{published:,} records from {self.table} to {self.topic}")
        return published
