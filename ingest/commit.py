"""The consumer's commits: a topic's held messages -> one Delta commit, on one background thread.

Consuming is Python and librdkafka; decoding and writing a batch is the JVM's,
but for a small batch the Python side can decode and write exactly as Spark
would (ingest/arrow_rows.py: `zync run`'s few records a table and cycle); the
JVM then only commits its file. One commit in flight at a time (ingest/pipeline.py) lets the two overlap while
commits land in the order the batches were read, so the table's offsets stay
the resume point. A batch the JVM cannot decode is searched for its first bad
message: with errors.tolerance none the messages before it are committed and
ingest stops at it; with all, every such message goes to the dead-letter table
in the same step (before the raw rows; see ingest/dead_letters.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from pyspark.sql import types as T

from ingest.arrow_rows import ArrowRows
from ingest.dead_letters import DeadLetter
from ingest.decode import BatchDecodeError, Decoder, Message, PreparedBatch
from ingest.evolution import Change
from ingest.fallback import SPARK_FAILURES, Fallback, after_failed_batch
from ingest.pipeline import OneInFlight
from ingest.topic import TopicState
from zync.errors import ZyncError
from zync.progress import Progress
from zync.spark_internals import java_class, java_session
from zync.wire import DecodeError


@dataclass(frozen=True)
class Batch:
    """One topic's messages sealed for one commit, with the column types they are written as."""

    state: TopicState
    messages: list[Message]
    key_type: T.DataType | None
    value_type: T.DataType | None
    changes: list[Change]
    prepared: PreparedBatch | None = None
    dead_letters: tuple[DeadLetter, ...] = ()


# Batches up to this many messages are decoded and written in Python when they can be (ingest/arrow_rows.py).
# A Spark job costs ~0.5 s more than the Python path's commit however few records it writes, and decodes
# about six times as fast (docs/reference/ingest.md, "Decoding"): the two meet at a few thousand records.
PYTHON_ROWS_UP_TO = 2_000


class Committer:
    def __init__(self, spark, states: Mapping[str, TopicState], decoder: Decoder, progress: Progress,
                 shape: Callable | None = None, python_rows: bool = True):
        self.spark = spark
        self.states = states
        self.decoder = decoder
        self.progress = progress
        self.shape = shape  # the shaper's apply, if any
        self.writer = OneInFlight()
        # Small batches decoded and written in Python; None: every batch through Spark.
        self.arrow_rows = ArrowRows(decoder.schemas) if python_rows else None
        self.python_commits = 0  # batches committed so (reported by benchmarks and tests)

    def start(self) -> None:
        """A fresh background thread for a run (the last run closed its own)."""
        self.writer = OneInFlight()

    def close(self) -> None:
        self.writer.close()

    def wait(self) -> None:
        self.writer.wait()

    def commit(self, state: TopicState) -> None:
        """Hand the topic's held messages to the background writer (after the batch in flight lands)."""
        if not state.holding:
            return
        schemas = state.schemas
        key_type = value_type = None
        if state.messages:
            key_type, value_type = schemas.column_type("key"), schemas.column_type("value")
            schemas.types.update(key=key_type, value=value_type)
        batch = Batch(state, state.messages, key_type, value_type, schemas.take_changes(),
                      self.decoder.prepare(state.messages) if state.messages else None, tuple(state.dead))
        state.messages, state.dead = [], []
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
        java_class(self.spark, "org.apache.spark.sql.SparkSession").setActiveSession(java_session(self.spark))
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
        if not self.shape and batch.changes and table.exists():
            table.evolve(batch.changes, batch.key_type, batch.value_type)
        if self._appended_in_python(batch):
            self._committed(batch, written="python")
            return
        try:
            frame = self.decoder.frame(messages, batch.key_type, batch.value_type, batch.prepared)
            if self.shape:
                frame = self.shape(frame)
            table.append(frame, f"the batch up to {messages[-1].where}")
        except ZyncError:
            raise
        except SPARK_FAILURES as e:
            # from_avro could not decode a message of the batch: find it.
            if after_failed_batch(e)[0] is not Fallback.BATCH:
                raise
            located = self.decoder.locate_error(messages)
            if located is None:
                raise
            self._undecodable(batch, located)
            return
        declined = table.declined if self.arrow_rows is not None else None
        self._committed(batch, written="spark", **({"python_declined": declined[:200]} if declined else {}))

    def _appended_in_python(self, batch: Batch) -> bool:
        """Whether the batch was decoded, written and committed without a Spark job (ingest/arrow_rows.py).

        Not for a shaper's batch (its columns are a Spark query's), one that evolved the table
        (Delta's schema merge is Spark's write), nor a large one; nor when the rows would not be
        exactly Spark's: the batch then goes through Spark, as all did before. A table's first
        batch creates it first (RawTable.create), unless the table is given by location.
        """
        batch.state.table.declined = None
        if self.arrow_rows is None or self.shape or len(batch.messages) > PYTHON_ROWS_UP_TO:
            return False
        arrow_rows, messages = self.arrow_rows, batch.messages
        table = batch.state.table
        if not table.exists():
            # The table's first batch: created with the batch's types, which hold every change so far.
            if not table.create(batch.key_type, batch.value_type, f"the batch up to {messages[-1].where}"):
                return False
        elif batch.changes:
            return False
        # What the batch's writer schemas say of the table lands with its rows: for each new table of
        # a Debezium database, one commit fewer (ALTER TABLE after the write took ~3 s).
        batch.state.schemas.note(with_next_append=True)
        if table.append_rows(lambda schema: arrow_rows.rows(messages, schema), f"the batch up to {messages[-1].where}"):
            self.python_commits += 1
            return True
        return False

    def _committed(self, batch: Batch, **extra) -> None:
        state, messages = batch.state, batch.messages
        if extra.get("written") != "python":  # a Python commit set what note() keeps (_appended_in_python)
            state.schemas.note()
        for m in messages:
            state.next_offsets[m.partition] = max(state.next_offsets.get(m.partition, 0), m.offset + 1)
        state.committed += len(messages)
        self.progress.commit(state.table.label, len(messages), dict(state.next_offsets),
                             check_ms=round(state.table.check_seconds * 1000), **extra)

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
