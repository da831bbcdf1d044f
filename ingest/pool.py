"""A raw pool: many topics in one Delta table, so that one commit takes a batch of every topic.

zync's own design (its pool holds every topic, `kafka.topic` in each record).
A whole database's cycle then costs one Delta commit whatever the number of
tables that changed, where a raw table per topic costs one commit each
(docs/benchmarks.md, "A whole database").

The pool has the raw table's envelope (`kafka`, first) and keeps each record's
key and value as JSON text (ingest/pool_json.py), since one table cannot take
every topic's types. Each pooled topic gets a raw view under its raw table's
name (ingest/pool_view.py) that gives its rows in spark-avro's types again;
mirrors and analysts read that view as they read a raw table.

The guarantees are the raw table's (ingest/table.py): one commit per batch with
the SetTransaction of ingest, the resume point is the pool's largest offset per
topic-partition, another ingest's commit meanwhile stops this one before it
commits. A topic's types are the merge of its writer schemas
(ingest/evolution.py), kept in the pool's properties in the same commit as the
rows that brought them; its view is replaced before that commit, so it never
lacks a type of the rows it shows.

One failing topic stops only itself: a message that cannot be decoded, or a
writer schema its types cannot take, ends that topic's part of the batch before
that message (the messages before it are committed); the run reports it, and
the topic is read from there again when it is tried again (errors.tolerance
none; dead letters are for raw tables).
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from typing import Any

import fastavro
import pyarrow as pa
from confluent_kafka import KafkaError, TopicPartition
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from ingest.arrow_rows import base_schema, kafka_array
from ingest.data_file import NotDecodable
from ingest.decode import Message
from ingest.evolution import IncompatibleSchemaError, merge
from ingest.pool_json import to_json
from ingest.pool_view import cut_view_sql, cuts_view_sql, view_sql
from ingest.schemas import WriterSchemas
from ingest.table import CHECKPOINT_INTERVAL_PROPERTY, RAW_CHECKPOINT_INTERVAL, RawTable, as_nullable
from ingest.transaction_cut import CutState
from zync import kafka_client
from zync.config import Target
from zync.errors import ZyncError
from zync.pools import CHANGED_PROPERTY, TYPES_PROPERTY, topics_tag
from zync.transactions import (CUT_TAG, DEFAULT_EXPIRE_AFTER_S, END, Cut, boundary_of, change_of, cut_table_name,
                               cut_fields, cut_topic, cut_value, cuts_view_name)
from zync.wire import HEADER, DecodeError, Registry

POOL_COLUMNS_TYPE = T.StringType()  # a pool's key and value: JSON text
MOST_RECORDS = 250_000  # a run's batch at most: the rest waits for the next run
READ_TIMEOUT_S = 30.0  # a run gives up reading to the marks after this long (the broker slow or gone)
POLL_S = 0.2
# The commits between the checkpoints Delta writes itself, in the commit that reaches one. `zync run`
# checkpoints a pool beside its cycle every RAW_CHECKPOINT_INTERVAL commits instead (service/run.py),
# so that ingest's commit, which every mirror of the pool waits for, does not pay ~1 s for it; this
# bound is for a pool whose run does not.
BESIDE_CHECKPOINT_INTERVAL = 1000


class PoolTopicError(ZyncError):
    """One topic of a pool cannot be taken past a message; the pool's other topics go on."""


@dataclass
class PoolRun:
    """What one run of a pool did: records committed per topic, and the topics that failed and why."""

    records: dict[str, int] = field(default_factory=dict)
    failed: dict[str, ZyncError] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.records.values())


class PoolIngest:
    """Ingest of every topic of one raw pool, one commit a run; kept by `zync run` across cycles."""

    def __init__(self, target: Target, pool: str, views: dict[str, str], spark,
                 checkpoint_interval: int | None = None, transactions: dict[str, str] | None = None,
                 expire_after_s: float = DEFAULT_EXPIRE_AFTER_S):
        """`pool`: the pool table (database.table); `views`: topic -> its raw view (database.table);
        `checkpoint_interval`: the pool's delta.checkpointInterval, set by its next commit if it differs
        (None: a new pool's is a raw table's, an existing pool's is left as it is);
        `transactions`: transaction topic -> its connector's topic prefix, for each connector whose cut the
        pool keeps (zync/transactions.py; its transaction topic is one of `views`)."""
        self.target = target
        self.checkpoint_interval = checkpoint_interval
        self.transactions = dict(transactions or {})
        self.expire_after_s = expire_after_s
        self.cuts: dict[str, CutState] = {}  # transaction topic -> its connector's cut, once resumed
        self.cut_table = cut_table_name(pool) if self.transactions else None  # a view of the pool's cut rows
        self._cut_view_made = False
        self._cuts_in_pool: dict[str, Cut] = {}  # transaction topic -> its newest cut row in the pool
        # What the cuts read of this batch's values, (topic, partition, offset) -> cut_fields(value), taken
        # as they are decoded: parsing every value's JSON again would hold a whole batch's values at once.
        self._cut_fields: dict[tuple[str, int, int], dict | None] = {}
        self.spark = spark
        self.pool = RawTable(spark, name=pool)
        self.views = dict(views)
        self.schemas = WriterSchemas(spark, Registry(target.schema_registry))
        self.consumer = kafka_client.consumer(target, group="zync-pool")
        self.next_offsets: dict[tuple[str, int], int] = {}
        self.types: dict[str, dict[str, T.DataType | None]] = {}
        self._resumed = False
        self._readers: dict[int, Any] = {}
        self._views_checked: set[str] = set()
        self._merged: set[tuple[str, str, int]] = set()  # (topic, part, writer schema id) merged into the types

    @property
    def label(self) -> str:
        return self.pool.label

    def has_rows(self, topic: str) -> bool:
        """Whether the pool holds records of `topic` (so its raw view is there), as this ingest knows it."""
        self._resume()
        return topic in self.types

    def add_topics(self, views: dict[str, str]) -> None:
        self.views.update(views)

    # --- where it stands ------------------------------------------------------

    def _resume(self) -> None:
        if self._resumed:
            return
        stored_cuts: dict[str, Cut] = {}
        if self.pool.exists():
            self.next_offsets = self.pool.resume_pool()
            stored = self.pool.stored_property(TYPES_PROPERTY, {})
            self.types = {topic: {part: _type(text) for part, text in parts.items()} for topic, parts in stored.items()}
            if self.transactions:
                tag = self.pool.newest_tag(CUT_TAG, self.pool.read_version)
                stored_cuts = {t: Cut.from_dict(c) for t, c in json.loads(tag).items()} if tag else {}
                # The tag and the cut row are of one commit; a pool without cut rows yet gets its cut's row
                # with the next commit.
                self._cuts_in_pool = {t: c for t, c in stored_cuts.items() if (cut_topic(t), 0) in self.next_offsets}
        for transaction_topic, prefix in self.transactions.items():
            cut = self.cuts[transaction_topic] = CutState(prefix, self._takes, stored_cuts.get(transaction_topic),
                                                          self.expire_after_s)
            if self.pool.exists():
                self._replay_past(transaction_topic, cut)
        self._resumed = True

    def _takes(self, topic: str) -> bool:
        return topic in self.views

    def _connector_of(self, topic: str) -> str | None:
        """The transaction topic of the connector whose cut takes `topic`'s changes, if any."""
        for transaction_topic, prefix in self.transactions.items():
            if topic != transaction_topic and topic.startswith(prefix + "."):
                return transaction_topic
        return None

    def _replay_past(self, transaction_topic: str, cut: CutState) -> None:
        """Give a resumed cut the pool's records past it, as the runs that committed them did."""
        kafka = F.col("kafka")
        past_end = (kafka.topic == transaction_topic) & (kafka.offset > F.lit(cut.cut.end_offset))
        offsets = cut.cut.offsets
        bound = (F.create_map(*[F.lit(x) for (t, p), o in sorted(offsets.items()) for x in (f"{t}:{p}", o)])
                 [F.concat(kafka.topic, F.lit(":"), kafka.partition.cast("string"))] if offsets else F.lit(None))
        data = [t for t in self.views if self._connector_of(t) == transaction_topic]
        past_changes = kafka.topic.isin(data) & (kafka.offset > F.coalesce(bound, F.lit(-1)))
        version = int(self.pool.read_version)
        pool = self.spark.sql(f"select kafka, value from {self.pool.sql_name} version as of {version}")
        rows = (pool.where(past_end | past_changes).select("kafka.topic", "kafka.partition", "kafka.offset", "value")
                .orderBy("topic", "partition", "offset").collect())
        # The transactions the cut passed lately (their ENDs at or before it, as many as it remembers): what
        # Debezium sends again of them after the resume is behind the cut (ingest/transaction_cut.py).
        # A transaction is a BEGIN and an END in the transaction topic: twice as many offsets back.
        if cut.cut.end_offset >= 0:
            lately = kafka.offset.between(F.lit(cut.cut.end_offset - 2 * cut.remembered), F.lit(cut.cut.end_offset))
            ends = (pool.where((kafka.topic == transaction_topic) & lately)
                    .select("kafka.offset", F.get_json_object("value", "$.status").alias("status"),
                            F.get_json_object("value", "$.id").alias("id"))
                    .where(F.col("status") == END).orderBy("offset").collect())
            cut.passed(b for b in (boundary_of(r["offset"], {"status": END, "id": r["id"]}) for r in ends) if b)
        self._feed(transaction_topic, [(r["topic"], r["partition"], r["offset"],
                                        None if r["value"] is None else json.loads(r["value"])) for r in rows])

    def _feed(self, transaction_topic: str, records: list[tuple[str, int, int, dict | None]]) -> None:
        """Records of one connector, (topic, partition, offset, decoded value), in offset order per partition."""
        cut, now = self.cuts[transaction_topic], time.monotonic()
        cut.changes((change_of(*record) for record in records if record[0] != transaction_topic), now)
        cut.boundaries((b for b in (boundary_of(offset, value) for topic, _, offset, value in records
                                    if topic == transaction_topic) if b is not None), now)

    def waiting(self, marks: kafka_client.Watermarks) -> dict[tuple[str, int], int]:
        """Messages Kafka holds past what the pool committed, per (topic, partition) that has any."""
        self._resume()
        found = {}
        for (topic, partition), (low, high) in sorted(marks.items()):
            if topic not in self.views:
                continue
            start = max(self.next_offsets.get((topic, partition), 0), low)
            if high > start:
                found[(topic, partition)] = high - start
        return found

    # --- one run ----------------------------------------------------------------

    def run(self, marks: kafka_client.Watermarks, topics: set[str] | None = None) -> PoolRun:
        """Read every due partition (of `topics`, if given) up to its mark and commit what decodes, once."""
        self._resume()
        due = {tp: count for tp, count in self.waiting(marks).items() if topics is None or tp[0] in topics}
        result = PoolRun()
        rows: list[tuple[str, Message, tuple]] = []
        changed: set[str] = set()
        if due:
            messages = self._read({tp: marks[tp][1] for tp in due},
                                  {tp: max(self.next_offsets.get(tp, 0), marks[tp][0]) for tp in due})
            rows, changed = self._decode(messages, result)
        if not rows and not self.expiry_due():
            return result
        self._ensure_pool()
        if self.cuts and not self._cut_view_made:
            self._ensure_cut_view()  # the data views read it
        for topic in sorted(changed | {t for t, _, _ in rows if t not in self._views_checked}):
            self._ensure_view(topic, replace=topic in changed)
        if changed:
            stored = {topic: {part: (t.json() if t is not None else None) for part, t in parts.items()}
                      for topic, parts in self.types.items()}
            self.pool.note_with_next_append({TYPES_PROPERTY: json.dumps(stored, sort_keys=True),
                                             CHANGED_PROPERTY: json.dumps(sorted(changed))})
        if self.checkpoint_interval is not None and \
                self.pool.stored_property(CHECKPOINT_INTERVAL_PROPERTY, None) != self.checkpoint_interval:
            # A commit's metadata names the topics whose types it changed: none, if only this.
            self.pool.note_with_next_append({CHECKPOINT_INTERVAL_PROPERTY: str(self.checkpoint_interval),
                                             **({} if changed else {CHANGED_PROPERTY: "[]"})})
        where = f"{len(rows)} records of {len({t for t, _, _ in rows})} topics"
        data_rows = rows
        cut_rows: list[tuple[str, Message, tuple]] = []
        if self.cuts:
            tag = self._advance_cuts(rows)
            cut_rows = self._cut_rows()
            rows = sorted(rows + cut_rows, key=lambda row: (row[0], row[1].partition, row[1].offset))
        tags = _tags(rows)
        if self.cuts:
            tags[CUT_TAG] = tag
        if not self.pool.append_rows(lambda schema: _arrow(rows, schema), where, tags=tags):
            raise ZyncError(f"raw pool {self.label} cannot take rows written in Python: {self.pool.declined}")
        for topic, message, _ in rows:
            key = (topic, message.partition)
            self.next_offsets[key] = max(self.next_offsets.get(key, 0), message.offset + 1)
        for topic, _, _ in data_rows:
            result.records[topic] = result.records.get(topic, 0) + 1
        if self.cuts:  # each connector's cut now has its row in the pool: written now, or unmoved since
            self._cuts_in_pool = {t: state.cut for t, state in self.cuts.items()}
        return result

    def expiry_due(self) -> bool:
        """Whether a connector's cut moves by time alone: a transaction it waits for has waited out the
        bound, so a commit of the cut's row is due even without a record to take."""
        self._resume()
        now = time.monotonic()
        return any(cut.expiry_due(now) for cut in self.cuts.values())

    def _cut_rows(self) -> list[tuple[str, Message, tuple]]:
        """A row for each connector whose cut moved since the pool's newest row of it: the commit that
        takes the changes behind a cut carries the cut (zync/transactions.py)."""
        now_ms = int(time.time() * 1000)
        rows = []
        for transaction_topic, state in sorted(self.cuts.items()):
            if self._cuts_in_pool.get(transaction_topic) == state.cut:
                continue
            topic = cut_topic(transaction_topic)
            # No Kafka timestamp: the file's times stay its records' (what freshness reads).
            message = Message(topic, 0, self.next_offsets.get((topic, 0), 0), 0, None, None, None, None)
            rows.append((topic, message, (None, json.dumps(cut_value(transaction_topic, state.cut, now_ms),
                                                           separators=(",", ":"), sort_keys=True))))
        return rows

    def _ensure_cut_view(self) -> None:
        """The pool's cut views (<pool>__cut, <pool>__cuts), made once a process, before the data views that
        join the first."""
        if self.spark.catalog.tableExists(self.cut_table) and \
                self.spark.catalog.getTable(self.cut_table).tableType != "VIEW":
            # Where the cut was once a table of its own (written after the pool's commit): the pool holds it now.
            self.spark.sql(f"drop table {_quoted(self.cut_table)}")
        self.spark.sql(cut_view_sql(self.cut_table, self.pool.name))
        self.spark.sql(cuts_view_sql(cuts_view_name(self.pool.name), self.pool.name))
        self._cut_view_made = True

    def _advance_cuts(self, rows: list[tuple[str, Message, tuple]]) -> str:
        """Every connector's cut after this batch (the tag its commit carries, CUT_TAG)."""
        by_connector: dict[str, list[tuple[str, int, int, dict | None]]] = {}
        for topic, message, texts in rows:
            if topic in self.cuts and message.partition != 0:
                raise ZyncError(f"transaction topic {topic} has a partition {message.partition}: its BEGIN and END "
                                "events are in commit order in one partition only. Give it one partition (Debezium "
                                "creates it so unless topic.creation says otherwise).")
            connector = topic if topic in self.cuts else self._connector_of(topic)
            if connector is not None:
                by_connector.setdefault(connector, []).append(
                    (topic, message.partition, message.offset,
                     self._cut_fields.get((topic, message.partition, message.offset))))
        self._cut_fields.clear()
        now = time.monotonic()
        for connector, records in by_connector.items():
            self._feed(connector, records)
        return json.dumps({t: cut.advance(now).to_dict() for t, cut in sorted(self.cuts.items())},
                          separators=(",", ":"), sort_keys=True)

    def _read(self, ends: dict[tuple[str, int], int], starts: dict[tuple[str, int], int]) -> list[Any]:
        """The messages from `starts` up to `ends` (at most MOST_RECORDS), in order per partition."""
        self.consumer.assign([TopicPartition(t, p, starts[(t, p)]) for (t, p) in sorted(starts)])
        open_ends = dict(ends)
        reached = dict(starts)  # per partition: the offset after the last message taken
        taken: list[Any] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while open_ends and len(taken) < MOST_RECORDS and time.monotonic() < deadline:
            # consume() waits for as many messages as it is asked for (or the timeout): ask for those still
            # expected, so that it returns as soon as they are in.
            expected = sum(end - reached[key] for key, end in open_ends.items())
            batch = self.consumer.consume(num_messages=max(1, min(10_000, MOST_RECORDS - len(taken), expected)),
                                          timeout=POLL_S)
            for msg in batch:
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ZyncError(f"raw pool {self.label}: Kafka: {msg.error()}")
                key = (msg.topic(), msg.partition())
                if key not in ends:
                    continue
                taken.append(msg)
                reached[key] = msg.offset() + 1
                if msg.offset() + 1 >= open_ends.get(key, 0):
                    open_ends.pop(key, None)
            if not batch:  # a mark past the last record (a transaction's marker): the position says so
                for key in list(open_ends):
                    position = self.consumer.position([TopicPartition(*key)])[0].offset
                    if position >= open_ends[key]:
                        open_ends.pop(key)
        self.consumer.unassign()
        return taken

    def _reader(self, schema_id: int) -> Any:
        parsed = self._readers.get(schema_id)
        if parsed is None:
            parsed = self._readers[schema_id] = fastavro.parse_schema(base_schema(self.schemas.avro(schema_id)))
        return parsed

    def _decode(self, consumed: list[Any], result: PoolRun) -> tuple[list[tuple[str, Message, tuple]], set[str]]:
        """(topic, message, (key JSON, value JSON)) of every message that decodes, in (topic, partition,
        offset) order, and the topics whose types this batch changed; a topic's first failure ends its
        part of the batch (result.failed says why)."""
        rows, changed = [], set()
        for msg in sorted(consumed, key=lambda m: (m.topic(), m.partition(), m.offset())):
            topic = msg.topic()
            if topic in result.failed:
                continue
            try:
                message = Message.of(msg, keep_headers=False)
                texts = tuple(self._json(message, part, changed) for part in ("key", "value"))
            except (DecodeError, NotDecodable, IncompatibleSchemaError) as e:
                result.failed[topic] = PoolTopicError(
                    f"topic {topic} partition {msg.partition()} offset {msg.offset()} cannot go into raw pool "
                    f"{self.label}: {e}. The topic's earlier records are committed and it stops there; the pool's "
                    "other topics go on. Fix the producer or its schema; the topic is read from that record "
                    "again when it is retried.")
                continue
            rows.append((topic, message, texts))
        return rows, changed

    def _json(self, message: Message, part: str, changed: set[str]) -> str | None:
        data, schema_id = getattr(message, part), getattr(message, f"{part}_schema_id")
        if data is None or schema_id is None:
            return None
        if (message.topic, part, schema_id) not in self._merged:
            parts = self.types.setdefault(message.topic, {"key": None, "value": None})
            writer = as_nullable(self.schemas.spark_type(schema_id))
            current = parts.get(part)
            merged = writer if current is None else merge(current, writer, (part,))[0]
            if current is None or merged.json() != current.json():
                parts[part] = merged
                changed.add(message.topic)
            self._merged.add((message.topic, part, schema_id))
        try:
            datum = fastavro.schemaless_reader(io.BytesIO(data[HEADER.size:]), self._reader(schema_id), None)
        except NotDecodable:
            raise
        except Exception as e:  # noqa: BLE001 - fastavro raises many kinds for corrupt bytes
            raise DecodeError(f"{part}: cannot decode with writer schema id {schema_id}: {e}") from None
        if part == "value" and self.cuts and (message.topic in self.cuts or self._connector_of(message.topic)):
            self._cut_fields[(message.topic, message.partition, message.offset)] = cut_fields(datum)
        return to_json(datum)

    # --- the pool and its views --------------------------------------------------

    def _ensure_pool(self) -> None:
        if self.pool.exists():
            return
        if not self.pool.create(POOL_COLUMNS_TYPE, POOL_COLUMNS_TYPE, f"raw pool {self.label}",
                                checkpoint_interval=self.checkpoint_interval or RAW_CHECKPOINT_INTERVAL):
            raise ZyncError(f"raw pool {self.label} cannot be created: {self.pool.declined}. Drop or move what "
                            "is at its location, then run again.")

    def _ensure_view(self, topic: str, replace: bool) -> None:
        """The topic's raw view, made if missing, replaced if its types changed."""
        view = self.views[topic]
        connector = self._connector_of(topic)
        # A view of a connector's topic is made again once per run of the process: it may predate the cut.
        if replace or connector is not None or not self.spark.catalog.tableExists(view):
            parts = self.types[topic]
            self.spark.sql(view_sql(view, self.pool.name, topic, parts.get("key") or T.StringType(),
                                    parts.get("value") or T.StringType(),
                                    cut=None if connector is None else (self.cut_table, connector)))
        self._views_checked.add(topic)

    def close(self) -> None:
        self.consumer.close()


def _quoted(name: str) -> str:
    return ".".join("`" + part.replace("`", "``") + "`" for part in name.split("."))


def _type(text: str | None) -> T.DataType | None:
    return None if text is None else T._parse_datatype_json_string(text)


def _arrow(rows: list[tuple[str, Message, tuple]], schema: T.StructType) -> pa.Table:
    """The batch as the pool's rows, in (topic, partition, offset) order: the envelope, then the key's
    and the value's JSON."""
    arrow_schema = pa.schema([pa.field(f.name, to_arrow_type(f.dataType), nullable=f.nullable) for f in schema.fields])
    messages = [message for _, message, _ in rows]
    return pa.Table.from_arrays([kafka_array(messages, arrow_schema.field("kafka").type),
                                 pa.array([texts[0] for _, _, texts in rows], pa.string()),
                                 pa.array([texts[1] for _, _, texts in rows], pa.string())], schema=arrow_schema)


def _tags(rows: list[tuple[str, Message, tuple]]) -> dict[str, str]:
    """The pool file's tag: per topic and partition, its rows and largest offset (zync/pools.py)."""
    counts: dict[str, dict[int, tuple[int, int]]] = {}
    for topic, message, _ in rows:
        parts = counts.setdefault(topic, {})
        n, _ = parts.get(message.partition, (0, -1))
        parts[message.partition] = (n + 1, message.offset)
    return topics_tag(counts)
