"""Benchmark: a whole database's changes, from their produce call to visible in their mirror, with
Debezium's JDBC sink upserting the same topics into PostgreSQL in the same run as the anchor.

    .venv/bin/python bench/wide.py [--tables N ...] [--skew uniform|zipf ...]
        [--rate 100] [--seconds 120] [--rows 2000] [--seed 1] [--drain 600] [--designs local,s3] [--keep]

Defaults: N = 10, 50 and 200 tables, each with both skews, in turn. One command, alone on the machine:
it starts its own Kafka, registry, catalog, Kafka Connect and PostgreSQL (`zync up --connect`, its own
state folder .local/bench-wide-state and ports) and stops them at the end (--keep leaves them).

--designs pool (and s3-pool) put every topic in one raw pool (`pool:` in the mirror entry; ingest/pool.py):
one Delta commit a cycle for all the tables that changed; a change is visible once a pool commit adds a
file of its topic reaching its offset.

--designs pool-txn is the pool with `consistency: transaction` (docs/reference/mirror-yaml.md, Source
transactions): the source then writes its changes in multi-table transactions with Debezium's
transaction metadata (Source; --transactions gives every design of the run that source, and is the
default when --designs has pool-txn), the pool also takes the transaction topic, and a change is
visible once a pool commit's cut (the `zync.pool.cut` tag of the file it adds: the connector's
offset per topic-partition) reaches its offset. The same commit holds the cut's row, which the raw
views read; the cut's state at the end is printed (`cut`).

--designs local,s3 runs each N and skew twice, alternating: `zync run` with its tables on local disk,
and with its warehouse on an S3 server the benchmark starts (`zync up --s3`, S3Proxy over a folder
of the state folder, loopback; docs/object-storage.md), its tables in a database of their own
(zync_s3), on topics of their own (server w050us3 ...). The Delta logs are read where the server keeps
its objects (one file an object), the commit's time being its log object's.

Per N and skew, on topics of their own (`<server>.public.t001` ...; server e.g. w050u: 50 tables,
uniform):

1. The source: N Debezium topics (one partition; Avro in the Confluent wire format, schemas in the
   registry; the envelope as Debezium's PostgreSQL connector writes it, testkit/debezium.py; key
   {id: int}; row id int, name nullable string, amount double, updated_at timestamp-millis, price
   decimal(12,2), seq long) and a snapshot of --rows records (op r) per table.
2. zync: a project with one mirror file mirroring every topic (hard deletes), compiled with
   `zync etl compile`, and one `zync run` process started before the snapshot is produced.
3. The anchor: Debezium's JDBC sink on the project's Kafka Connect, one connector (`topics.regex`
   over the server's topics, `insert.mode=upsert`, `delete.enabled=true`,
   `primary.key.mode=record_key`, table = the topic with its dots as underscores) into the project's
   PostgreSQL, its tables created beforehand with a trigger recording (table, key, seq,
   clock_timestamp()) of every row it writes into an arrivals table.
4. Then --rate change events per second for --seconds, each to a table chosen uniformly or by Zipf's
   law (s = 1, seeded), of updates (60 %), creates (20 %) and deletes followed by their tombstones
   (20 %); every event carries an increasing sequence number (its row's `seq`, the source's `lsn`).

Latency of a change: from its produce call (time.time() at the call) to when it is visible, on the
same clock:
- in its mirror: the Delta logs on disk (the warehouse below the state folder, or the S3 server's folder). A mirror that is a
  Delta table: the first of its commits whose cursor (commit userMetadata, macros/mirror/cursor/)
  reached the change's offset. A mirror that is a view over `<mirror>__base` and the raw table
  (merge-on-read): the first raw-table commit adding the change's offset (its files' kafka.offset
  statistics), not before the base existed. The commit's time is its log file's modification time
  (Delta's own commit time). `visible_at` is the rule.
- in PostgreSQL: the first arrival of its key whose row is at least as new (its seq, or a delete).
A change not visible --drain seconds after the last was produced is counted missing.

Printed per N and skew, zync run's and the sink's side by side: p50/p95/p99/max latency, missing
changes; whether lag stayed bounded (the mean backlog, changes produced and not yet visible, over the
last quarter of the produce window is at most 1.5 times that over its middle quarter plus 5 s of
events, and nothing is missing); the first build (snapshot produced -> every mirror built / every row
in PostgreSQL); `zync run`'s cycles (from its JSON log lines: count, p50/max seconds, each stage's
share); the peak RSS of `zync run` (Python process and Spark JVM) and of the Connect worker; and
whether each side's rows equal the source's final state (every key's last row; checked after the run).
Targets: N = 50: p50 <= 1 s and p99 <= 3 s; N = 200: p50 <= 1.5 s, p99 <= 5 s and lag bounded; memory bounded
in N (`zync run`'s peak at the largest N at most 1.5 times that at the smallest). JSON with the
command, date, machine and every figure in bench/out/wide-<date>T<time>.json.
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "bench" / "out"
STATE = ROOT / ".local" / "bench-wide-state"
PROJECTS = STATE / "projects"
LOGS = STATE / "logs"
PORTS = {"ZYNC_KAFKA_PORT": "24792", "ZYNC_REGISTRY_PORT": "24781", "ZYNC_CATALOG_PORT": "25127",
         "ZYNC_CONNECT_PORT": "24783", "ZYNC_POSTGRES_PORT": "24732", "ZYNC_S3_PORT": "24790"}
BIN = ROOT / ".venv" / "bin"
SCHEMA = "zync"  # the local target's schema: raw tables and mirrors
S3_SCHEMA = "zync_s3"  # the s3 design's: a database of its own, made in the S3 server's warehouse
# Where the tables are; with -pool, the topics in one raw pool; pool-txn: that pool with `consistency: transaction`;
# pool-beside: that pool with zync run's dbt stage beside its cycle (`zync run --dbt beside`).
DESIGNS = ("local", "s3", "pool", "s3-pool", "pool-txn", "pool-beside")


def on_s3(design: str) -> bool:
    return design.startswith("s3")


def pooled(design: str) -> bool:
    return design.endswith("pool") or whole_transactions(design) or dbt_beside(design)


def dbt_beside(design: str) -> bool:
    """Whether the design's zync run runs its dbt stage beside the cycle (`--dbt beside`)."""
    return design.endswith("-beside")


def whole_transactions(design: str) -> bool:
    """Whether the design's mirrors show their connector's changes up to its cut (`consistency: transaction`)."""
    return design.endswith("-txn")

DB_SCHEMA = "public"  # the source database's schema, in the topic names
PARTITION = 0  # every topic has one
ARRIVALS = "_arrivals"

TARGETS = {50: {"p50_s": 1.0, "p99_s": 3.0}, 200: {"p50_s": 1.5, "p99_s": 5.0, "bounded": True}}
READ_MIRRORS_PER_JVM = 40  # mirrors one read-back process reads (see mirror_contents)
MEMORY_GROWTH = 1.5  # zync run's peak RSS at the largest N / at the smallest, at most
OPS = (("u", 0.6), ("c", 0.2), ("d", 0.2))
TRANSACTION_CHANGES = (1, 5)  # with --transactions, a source transaction's changes: drawn uniformly from this range
TRANSACTION_TABLES = (1, 3)  # and the tables it changes (at most its changes)
FIRST_XID = 1000  # the source's first transaction id


# ---------------------------------------------------------------------------
# Pure logic (tests/unit/test_wide_bench.py)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile q (0..1) of values (bench/latency.py's)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def zipf_weights(n: int, s: float = 1.0) -> list[float]:
    """Zipf's law over n tables: the k-th (from 1) weighs 1 / k^s."""
    return [1.0 / (k ** s) for k in range(1, n + 1)]


def table_chooser(n: int, skew: str, rng: random.Random) -> Callable[[], int]:
    """A function choosing a table index 0..n-1 per call: uniformly, or Zipf-skewed (table 0 the hottest)."""
    if skew == "uniform":
        return lambda: rng.randrange(n)
    if skew != "zipf":
        raise ValueError(f"skew must be uniform or zipf, not {skew!r}")
    cumulative, total = [], 0.0
    for w in zipf_weights(n):
        total += w
        cumulative.append(total)
    return lambda: min(n - 1, bisect.bisect_right(cumulative, rng.random() * total))


@dataclass(frozen=True)
class Commit:
    """One Delta commit of a table: its version, when it became visible, and per Kafka partition the
    largest offset a reader of the mirror sees once it is there (none: a commit that moves nothing)."""

    version: int
    at: float
    reach: dict[int, int]


def commit_reach(actions: Iterable[dict], mirror: str | None, topic: str | None = None,
                 cut: str | None = None) -> dict[int, int]:
    """What one commit makes visible, from its log actions.

    mirror given: the mirror's cursor carried in commitInfo.userMetadata (only a commit naming this
    mirror: the setting is session-wide); None: a raw table's commit, the largest kafka.offset per
    partition of the files it adds (their statistics), a file spanning several partitions counting
    for none (its per-partition maxima are unknown). With `cut` (a connector's transaction topic), a
    raw pool's commit reaches, for `topic`, its connector's cut after it: per partition the offset
    its file's cut tag gives (zync.pool.cut; a pooled raw view of the connector shows rows up to it).
    """
    reach: dict[int, int] = {}
    from zync.pools import file_topics
    from zync.transactions import CUT_TAG, Cut

    if cut is not None:
        for action in actions:
            tag = (action.get("add") or {}).get("tags", {}).get(CUT_TAG) if mirror is None else None
            if not tag:
                continue
            stored = json.loads(tag).get(cut)
            for (t, p), o in (Cut.from_dict(stored).offsets.items() if stored else ()):
                if t == topic:
                    reach[p] = max(reach.get(p, -1), o)
        if mirror is None:
            return reach

    for action in actions:
        if mirror is not None and "commitInfo" in action:
            try:
                stored = json.loads(action["commitInfo"].get("userMetadata") or "")
            except ValueError:
                continue
            if isinstance(stored, dict) and str(stored.get("zync_mirror", "")).split(".")[-1].strip("`").lower() \
                    == mirror.lower():
                reach = {int(p): int(o) for p, o in (stored.get("cursor") or {}).items()}
        elif mirror is None and "add" in action:
            try:
                stats = json.loads(action["add"].get("stats") or "{}")
                low, high = stats["minValues"]["kafka"], stats["maxValues"]["kafka"]
            except (ValueError, KeyError, TypeError):
                continue
            if topic is not None:  # a raw pool's file: its topic's offsets, from its tag
                for p, o in file_topics(action["add"], stats).get(topic, {}).get("offsets", {}).items():
                    reach[p] = max(reach.get(p, -1), o)
                continue
            if low.get("partition") == high.get("partition") and "offset" in high:
                p = int(high["partition"])
                reach[p] = max(reach.get(p, -1), int(high["offset"]))
    return reach


def visible_at(commits: Sequence[Commit], partition: int, offset: int) -> float | None:
    """When the record at (partition, offset) became visible: the time of the first commit (by
    version) that reached it, or None if none has yet."""
    for commit in sorted(commits, key=lambda c: c.version):
        if commit.reach.get(partition, -1) >= offset:
            return commit.at
    return None


class DeltaLog:
    """A Delta table's log on disk, read as it grows: its commits (JSON files), each parsed once."""

    def __init__(self, folder: Path, mirror: str | None, topic: str | None = None, cut: str | None = None):
        self.log = folder / "_delta_log"
        self.mirror = mirror
        self.topic = topic  # a raw pool's: only the files of this topic count
        self.cut = cut  # and with its connector's transaction topic, only up to the cut its commit tags
        self._commits: dict[int, Commit] = {}

    def exists(self) -> bool:
        return self.log.is_dir()

    def first_commit_at(self) -> float | None:
        first = self.log / f"{0:020d}.json"
        return first.stat().st_mtime if first.exists() else None

    def commits(self) -> list[Commit]:
        if self.log.is_dir():
            for path in self.log.glob("*.json"):
                if not path.stem.isdigit() or int(path.stem) in self._commits:
                    continue
                version = int(path.stem)
                at = path.stat().st_mtime
                actions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
                self._commits[version] = Commit(version, at, commit_reach(actions, self.mirror, self.topic,
                                                                          self.cut))
        return [self._commits[v] for v in sorted(self._commits)]


class MirrorLog:
    """Where a mirror's visibility is read from: its own log if it is a Delta table; if it is a view
    (over `<mirror>__base` and the raw table, or over the raw table alone before its first fold),
    the raw table's log, no commit counting before the view was there: the base's first commit, or
    for a view made without a base, when `zync run` logged the stage that made it (`view_built_at`,
    from the run's log, written as its cycle ends: no Delta log marks a view)."""

    def __init__(self, database: Path, mirror: str, raw: str,
                 view_built_at: Callable[[str], float | None] = lambda mirror: None, pool_topic: str | None = None,
                 cut: str | None = None):
        """raw: the raw table, or with pool_topic the raw pool holding that topic; cut: the transaction topic
        of the topic's connector, if its raw view stops at the connector's cut."""
        self.mirror = mirror
        self.own = DeltaLog(database / mirror, mirror)
        self.base = DeltaLog(database / f"{mirror}__base", mirror)
        self.raw = DeltaLog(database / raw, None, pool_topic, cut)
        self.view_built_at = view_built_at
        self._since: float | None = None

    def _view_since(self) -> float | None:
        # The first of the two known is the earlier: a base made by a fold comes after the view it
        # follows, and the run logs a build after its base's commit. So it is read until known, once.
        if self._since is None:
            self._since = self.base.first_commit_at() or self.view_built_at(self.mirror)
        return self._since

    @property
    def kind(self) -> str | None:
        if self.own.exists():
            return "table"
        if self._view_since() is not None:
            return "view"
        return None

    def commits(self) -> list[Commit]:
        if self.own.exists():
            return self.own.commits()
        since = self._view_since()
        if since is None:
            return []
        return [Commit(c.version, max(c.at, since), c.reach) for c in self.raw.commits()]

    def reach(self, partition: int = PARTITION) -> int:
        """The largest offset visible now."""
        return max((c.reach.get(partition, -1) for c in self.commits()), default=-1)


@dataclass(frozen=True)
class Arrival:
    """A row the sink wrote, as the trigger recorded it: op I, U or D; seq of the row (D: of the row deleted)."""

    op: str
    seq: int | None
    at: float


def arrival_visible(seq: int, arrivals: Sequence[Arrival]) -> float | None:
    """When the change with `seq` to a key became visible in PostgreSQL: the first arrival of the key
    at least as new (a row with its seq or a later one, or the key's delete: a key's last change).
    Keys are never re-created, so a delete ends a key's history."""
    seen = [a.at for a in arrivals if a.op == "D" or (a.seq is not None and a.seq >= seq)]
    return min(seen) if seen else None


def backlog(pairs: Sequence[tuple[float, float | None]], at: float) -> int:
    """Changes produced by `at` and not yet visible then; pairs are (produced, visible or None)."""
    return sum(1 for produced, visible in pairs if produced <= at and (visible is None or visible > at))


def mean_backlog(pairs: Sequence[tuple[float, float | None]], start: float, end: float, step: float = 1.0) -> float:
    points = [start + i * step for i in range(max(1, int((end - start) / step) + 1))]
    return statistics.fmean(backlog(pairs, t) for t in points)


# ---------------------------------------------------------------------------
# The source database: N tables, their Debezium events


def row_fields() -> list[dict]:
    return [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "amount", "type": "double"},
        {"name": "updated_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "seq", "type": "long"},
    ]


@dataclass
class Change:
    """One change event of the produce window: its table (index), key, op and sequence number, when
    its produce call was made, and the offset Kafka gave it."""

    seq: int
    table: int
    key: int
    op: str
    produced: float
    offset: int | None = None


def comparable(row: dict) -> tuple:
    """A row as both sides are compared: (name, amount, updated_at in ms, price as text, seq)."""
    return (row["name"], float(row["amount"]), int(row["updated_at"]), str(row["price"]), int(row["seq"]))


class Source:
    """The database the benchmark plays: its tables' rows, each change produced as Debezium writes it.

    With `transactions`, as its connector writes them with `provide.transaction.metadata`: the changes
    come in source transactions of TRANSACTION_CHANGES changes over TRANSACTION_TABLES tables (seeded;
    the tables drawn by the run's chooser), each change carrying its transaction block, and the
    transaction topic `<server>.transaction` (one partition) gets the transaction's BEGIN before its
    changes and its END (counts per table) after them, all produced back to back as Debezium streams
    a committed transaction. Transaction ids are PostgreSQL's `<xid>:<lsn>`; the snapshot carries none
    (its last record is marked `last`, as Debezium marks it, with or without transactions)."""

    def __init__(self, target, server: str, tables: int, seed: int, transactions: bool = False):
        from testkit import debezium
        from zync import kafka_client
        from zync.wire import Registry

        self.debezium = debezium
        self.target, self.server = target, server
        self.tables = [f"t{i:03d}" for i in range(1, tables + 1)]
        self.topics = [debezium.topic(server, DB_SCHEMA, t) for t in self.tables]
        self.rng = random.Random(seed)
        registry = Registry(target.schema_registry)
        self.writers = []
        for table, topic in zip(self.tables, self.topics):
            kafka_client.ensure_topic(target, topic)
            self.writers.append((
                registry.register(f"{topic}-key", debezium.key_schema(server, DB_SCHEMA, table,
                                                                      [{"name": "id", "type": "int"}])),
                registry.register(f"{topic}-value", debezium.value_schema(server, DB_SCHEMA, table, row_fields(),
                                                                          transaction=transactions))))
        self.transactions = transactions
        self.transaction_topic = debezium.transaction_topic(server) if transactions else None
        if self.transaction_topic:
            kafka_client.ensure_topic(target, self.transaction_topic, num_partitions=1)
            self.transaction_writers = (
                registry.register(f"{self.transaction_topic}-key", debezium.TRANSACTION_KEY),
                registry.register(f"{self.transaction_topic}-value", debezium.TRANSACTION_VALUE))
        self.shapes = random.Random(seed + 2)  # the transactions' sizes and tables
        self.xid = FIRST_XID
        self.transaction_sizes: list[int] = []  # changes per transaction, in order
        self.transaction_tables: list[int] = []  # tables per transaction
        self.producer = kafka_client.producer(target, **{"linger.ms": 5})
        self.rows: list[dict[int, dict]] = [{} for _ in self.tables]  # the current state: key -> row
        self.live: list[list[int]] = [[] for _ in self.tables]  # the keys, to choose one fast
        self.next_id = [1] * len(self.tables)
        self.seq = 0
        self.records = 0
        self.changes: list[Change] = []
        self.failed: list[str] = []

    # -- rows and events

    def _row(self, table: int, key: int, seq: int, now_ms: int) -> dict:
        rng = self.rng
        return {"id": key, "name": None if rng.random() < 0.1 else f"{self.tables[table]}-{key}-{seq}",
                "amount": round(rng.uniform(0, 10_000), 2), "updated_at": now_ms,
                "price": Decimal(rng.randrange(10 ** 8)).scaleb(-2), "seq": seq}

    def _delivered(self, change: Change | None, err, msg) -> None:
        if err is not None:
            self.failed.append(str(err))
        elif change is not None:
            change.offset = msg.offset()

    def _send(self, table: int, key: int, value: dict | None, change: Change | None = None) -> None:
        self._produce(self.topics[table], self.writers[table], {"id": key}, value, change)

    def _produce(self, topic: str, writers: tuple, key: dict, value: dict | None,
                 change: Change | None = None) -> None:
        from zync.wire import encode

        key_writer, value_writer = writers
        data = (encode(key_writer, key), None if value is None else encode(value_writer, value))
        while True:
            try:
                self.producer.produce(topic, key=data[0], value=data[1],
                                      on_delivery=partial(self._delivered, change))
                break
            except BufferError:
                self.producer.poll(0.01)
        self.records += 1
        self.producer.poll(0)

    def _event(self, table: int, op: str, after: dict | None, before: dict | None, now: float, seq: int,
               snapshot: bool | str = False, transaction: tuple[int, int, int] | None = None) -> dict:
        """`transaction`: (xid, the change's place in it, its place among the transaction's changes to `table`)."""
        ms = int(now * 1000)
        source = self.debezium.source(self.server, "wide", DB_SCHEMA, self.tables[table], ms, lsn=seq,
                                      snapshot=snapshot, tx_id=transaction[0] if transaction else None)
        block = (self.debezium.transaction_block(self.debezium.transaction_id(transaction[0], seq), *transaction[1:])
                 if transaction else None)
        return self.debezium.event(op, after, before, source, ms, block)

    def snapshot(self, rows: int) -> None:
        """`rows` snapshot reads (op r) per table, flushed; the last one marked as Debezium marks it."""
        for table in range(len(self.tables)):
            for i in range(rows):
                key, self.next_id[table] = self.next_id[table], self.next_id[table] + 1
                self.seq += 1
                now = time.time()
                after = self._row(table, key, self.seq, int(now * 1000))
                marker = "last" if table == len(self.tables) - 1 and i == rows - 1 else True
                self._send(table, key, self._event(table, "r", after, None, now, self.seq, snapshot=marker))
                self.rows[table][key] = after
                self.live[table].append(key)
        self.flush()

    def transaction(self, choose: Callable[[], int]) -> int:
        """One source transaction, produced now: its BEGIN, its changes, its END; the changes it made."""
        shapes = self.shapes
        size = shapes.randint(*TRANSACTION_CHANGES)
        want = shapes.randint(TRANSACTION_TABLES[0], min(TRANSACTION_TABLES[1], size, len(self.tables)))
        tables: list[int] = []
        for _ in range(100 * want):  # distinct tables, as the chooser draws them
            drawn = choose()
            if drawn not in tables:
                tables.append(drawn)
                if len(tables) == want:
                    break
        order = tables + [shapes.choice(tables) for _ in range(size - len(tables))]
        shapes.shuffle(order)
        self.xid += 1
        xid, debezium = self.xid, self.debezium
        self._produce(self.transaction_topic, self.transaction_writers,
                      {"id": debezium.transaction_id(xid, self.seq + 1)},
                      debezium.transaction_event("BEGIN", debezium.transaction_id(xid, self.seq + 1),
                                                 int(time.time() * 1000)))
        per_table: dict[int, int] = {}
        for total_order, table in enumerate(order, 1):
            per_table[table] = per_table.get(table, 0) + 1
            self.change(table, (xid, total_order, per_table[table]))
        counts = {f"{DB_SCHEMA}.{self.tables[t]}": n for t, n in per_table.items()}
        end_id = debezium.transaction_id(xid, self.seq)
        self._produce(self.transaction_topic, self.transaction_writers, {"id": end_id},
                      debezium.transaction_event("END", end_id, int(time.time() * 1000), counts))
        self.transaction_sizes.append(size)
        self.transaction_tables.append(len(per_table))
        return size

    def change(self, table: int, transaction: tuple[int, int, int] | None = None) -> Change:
        """One change to a table, produced now: an update, a create or a delete (with its tombstone);
        `transaction`: its place in a source transaction (Source._event)."""
        live = self.live[table]
        draw = self.rng.random()
        op = "c" if not live else ("u" if draw < OPS[0][1] else "c" if draw < OPS[0][1] + OPS[1][1] else "d")
        self.seq += 1
        if op == "c":
            key, self.next_id[table] = self.next_id[table], self.next_id[table] + 1
            live.append(key)
        else:
            key = live[self.rng.randrange(len(live))]
        before = self.rows[table].get(key)
        now = time.time()
        change = Change(self.seq, table, key, op, now)
        if op == "d":
            live.remove(key)  # O(rows): fine at these rates
            del self.rows[table][key]
            self._send(table, key, self._event(table, "d", None, before, now, self.seq, transaction=transaction),
                       change)
            self._send(table, key, None)  # the tombstone
        else:
            after = self._row(table, key, self.seq, int(now * 1000))
            self.rows[table][key] = after
            self._send(table, key, self._event(table, op, after, before, now, self.seq, transaction=transaction),
                       change)
        self.changes.append(change)
        return change

    def stream(self, rate: float, seconds: float, choose: Callable[[], int]) -> tuple[float, float]:
        """`rate` changes per second for `seconds`, to tables chosen by `choose` (with transactions: each
        transaction's changes at once, when its first is due); (start, end) times."""
        started, start = time.monotonic(), time.time()
        sent = 0
        while time.monotonic() - started < seconds:
            delay = started + sent / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if self.transactions:
                sent += self.transaction(choose)
            else:
                self.change(choose())
                sent += 1
        end = time.time()
        self.flush()
        return start, end

    def flush(self) -> None:
        left = self.producer.flush(120)
        if left or self.failed:
            raise SystemExit(f"producing to {self.server}'s topics failed: {left} undelivered; {self.failed[:3]}")

    def expected(self) -> dict[str, dict[int, tuple]]:
        """Every table's final state: key -> its comparable row."""
        return {t: {k: comparable(r) for k, r in rows.items()} for t, rows in zip(self.tables, self.rows)}


# ---------------------------------------------------------------------------
# zync's side: the project, its mirror file, `zync run`


def mirror_name(server: str, table: str) -> str:
    return f"{server}_{table}_mirror"


def explicit_mirror_file(server: str, topics: list[str]) -> str:
    """The same mirrors as pattern_mirror_file's, one explicit entry per table."""
    entries = [f"  - model: {mirror_name(server, t.rsplit('.', 1)[1])}\n    topic: {t}\n    delete: hard\n"
               for t in topics]
    return "mirrors:\n" + "".join(entries)


def pattern_mirror_file(server: str, topics: list[str], pool: str | None = None, transactions: bool = False) -> str:
    """One pattern entry over the broker's topics: every table of the server, names from the template
    (all in one raw pool, if given; with `transactions`, up to their connector's cut)."""
    return (f"mirrors:\n  - topics: '{server}\\.{DB_SCHEMA}\\..*'\n    name: '{{server}}_{{table}}_mirror'\n"
            "    delete: hard\n" + (f"    pool: {pool}\n" if pool else "")
            + ("    consistency: transaction\n" if transactions else ""))


# The project's one mirror file: every topic of the server mirrored, hard deletes.
mirror_file = pattern_mirror_file


def zync(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "zync"), *args], cwd=cwd,
                          env={**os.environ, **(env or {}), "ZYNC_PROJECT_DIR": str(cwd)},
                          text=True, capture_output=True)


def design_env(design: str) -> dict[str, str]:
    """The environment of a design's zync processes: none for local disk; for s3 the S3 server's
    warehouse, endpoint and credentials file, and a database of its own."""
    if not on_s3(design):
        return {}
    from stack import s3

    return {**s3.environment(), "ZYNC_SCHEMA": S3_SCHEMA}


def database_folder(design: str) -> Path:
    """Where a design's tables are files: the local warehouse's database folder, or the S3 server's
    folder of the warehouse's objects (its filesystem store keeps an object as a file of its key)."""
    if not on_s3(design):
        return Path(os.environ["ZYNC_STATE_DIR"]) / "warehouse" / f"{SCHEMA}.db"
    from stack import s3

    bucket, prefix = s3.warehouse().removeprefix("s3a://").split("/", 1)
    return s3.folder() / "data" / bucket / prefix / f"{S3_SCHEMA}.db"


class ZyncRun:
    """One `zync run` process of the project, as a user starts it; its log in a file, its memory watched."""

    def __init__(self, project: Path, log: Path, threads: int | None = None, options: tuple[str, ...] = (),
                 env: dict[str, str] | None = None):
        from bench.rss import PeakRss

        self.log = log
        self.out = log.open("w")
        self.started = time.time()
        more = ["--threads", str(threads)] if threads else []
        self.process = subprocess.Popen([str(BIN / "zync"), "run", "--interval", "1s", *more, *options], cwd=project,
                                        env={**os.environ, **(env or {}), "ZYNC_PROJECT_DIR": str(project)},
                                        stdout=self.out, stderr=subprocess.STDOUT)
        self.rss = PeakRss(self.process.pid)
        self._read_to = 0  # bytes of the log read by built_at
        self._built: dict[str, float] = {}

    def built_at(self, model: str) -> float | None:
        """When the first dbt stage that ran `model` successfully was logged (its JSON line's ts, written
        as its cycle ends), read on from where the last call stopped."""
        if model in self._built or self.log.stat().st_size == self._read_to:
            return self._built.get(model)
        with self.log.open(errors="replace") as log:
            log.seek(self._read_to)
            for line in log:
                if not line.endswith("\n"):
                    break  # being written: read again next time
                self._read_to += len(line.encode())
                try:
                    entry = json.loads(line) if line.startswith("{") else {}
                except ValueError:
                    continue
                if entry.get("stage") == "dbt":
                    for name in entry.get("models", []):
                        self._built.setdefault(name, entry["ts"])
        return self._built.get(model)

    def lines(self) -> list[dict]:
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except ValueError:
                    pass
        return found

    def check(self) -> None:
        if self.process.poll() is not None:
            raise SystemExit(f"zync run exited ({self.process.returncode}):\n{self.log.read_text()[-3000:]}")

    def wait_ready(self, timeout: float = 600) -> float:
        """Until it says it is ready (its first cycle ended, the engine warm): seconds from its start."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            for line in self.lines():
                if line.get("event") == "note" and line.get("ready"):
                    return line["ts"] - self.started
            time.sleep(0.5)
        raise SystemExit(f"zync run did not load its project in {timeout:.0f} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> dict:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(600)
        self.rss.stop()
        self.out.close()
        return {"exit_code": code, "peak_python_mb": self.rss.python_kb // 1024,
                "peak_jvm_mb": self.rss.jvm_kb // 1024}


def cycle_summary(lines: list[dict], start: float, end: float) -> dict:
    """zync run's busy cycles that ended in [start, end]: count, p50/max seconds, each stage's seconds
    (total and share of the cycles' time), models run and tables ingested per cycle."""
    cycles = [l for l in lines if l.get("stage") == "cycle" and start <= l["ts"] <= end]
    if not cycles:
        return {"cycles": 0}
    numbers = {l["cycle"] for l in cycles}
    stages: dict[str, float] = defaultdict(float)
    models, tables = [], []
    for l in lines:
        if l.get("cycle") in numbers and l.get("stage") in ("ingest", "dbt", "egress", "compact") and "seconds" in l:
            stages[l["stage"]] += l["seconds"]
            if l["stage"] == "dbt":
                models.append(len(l.get("models", [])))
            if l["stage"] == "ingest":
                tables.append(len(l.get("tables", {})))
    seconds = [l["seconds"] for l in cycles]
    total = sum(seconds)
    return {
        "cycles": len(cycles), "p50_s": round(statistics.median(seconds), 1), "max_s": round(max(seconds), 1),
        "mean_s": round(total / len(cycles), 1),
        "stage_s": {k: round(v, 1) for k, v in stages.items()},
        "stage_share": {k: round(v / total, 2) for k, v in stages.items()} if total else {},
        "models_per_dbt_stage": round(statistics.fmean(models), 1) if models else 0,
        "dbt_s_per_model_run": round(stages["dbt"] / sum(models), 2) if sum(models) else None,
        "tables_per_ingest_stage": round(statistics.fmean(tables), 1) if tables else 0,
        "errors": sum(1 for l in lines if "error" in l and start <= l.get("ts", 0) <= end),
    }


# ---------------------------------------------------------------------------
# The anchor's side: PostgreSQL tables with their arrival trigger, the JDBC sink


ARRIVALS_SQL = f"""
create table {ARRIVALS} (n bigserial primary key, tbl text not null, id integer not null, op char(1) not null,
                         seq bigint, at timestamptz not null);
create function _arrived() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    insert into {ARRIVALS} (tbl, id, op, seq, at) values (tg_table_name, old.id, 'D', old.seq, clock_timestamp());
  else
    insert into {ARRIVALS} (tbl, id, op, seq, at) values (tg_table_name, new.id, left(tg_op, 1), new.seq,
                                                          clock_timestamp());
  end if;
  return null;
end $$;
"""


def sink_table(topic: str) -> str:
    """The sink's table of a topic: the topic with its dots as underscores (its `${topic}` format)."""
    return topic.replace(".", "_")


class Anchor:
    """Debezium's JDBC sink over the server's topics into a database of its own."""

    def __init__(self, target, server: str, topics: list[str]):
        from stack import connect, postgres

        self.postgres = postgres
        self.connect = connect.Connect()
        self.name = f"{server}-jdbc-sink"
        self.database = f"wide_{server}"
        self.tables = {sink_table(t): i for i, t in enumerate(topics)}
        postgres.drop_database(self.database)
        postgres.ensure_database(self.database)
        postgres.psql(ARRIVALS_SQL + "".join(
            f"create table {name} (id integer primary key, name text, amount double precision, "
            f"updated_at timestamp, price numeric(12, 2), seq bigint);\n"
            f"create trigger arrived after insert or update or delete on {name} "
            "for each row execute function _arrived();\n" for name in self.tables), self.database)
        config = connect.jdbc_sink(target, self.name, [], self.database,
                                   topics_regex=rf"{server}\.{DB_SCHEMA}\..*",
                                   **{"collection.name.format": "${topic}"})
        self.connect.run(self.name, config)

    def count(self) -> tuple[int, float | None]:
        """Arrivals so far and the newest one's time."""
        row = self.postgres.query(f"select count(*) as n, extract(epoch from max(at)) as at from {ARRIVALS}",
                                  self.database)[0]
        return int(row["n"]), float(row["at"]) if row["at"] is not None else None

    def mark(self) -> int:
        return int(self.postgres.query(f"select coalesce(max(n), 0) as n from {ARRIVALS}", self.database)[0]["n"])

    def arrivals(self, after: int) -> dict[tuple[int, int], list[Arrival]]:
        """(table index, key) -> the arrivals numbered above `after`, in time order."""
        found: dict[tuple[int, int], list[Arrival]] = defaultdict(list)
        rows = self.postgres.query(f"select tbl, id, op, seq, extract(epoch from at) as at from {ARRIVALS} "
                                   f"where n > {after} order by at", self.database)
        for r in rows:
            found[(self.tables[r["tbl"]], int(r["id"]))].append(
                Arrival(r["op"], None if r["seq"] is None else int(r["seq"]), float(r["at"])))
        return found

    def contents(self, names: list[str]) -> dict[str, dict[int, tuple]]:
        found: dict[str, dict[int, tuple]] = {}
        for sink_name, table in zip(self.tables, names):
            rows = self.postgres.query(
                f"select id, name, amount, (extract(epoch from updated_at) * 1000)::bigint as updated_at, "
                f"price::text as price, seq from {sink_name}", self.database)
            found[table] = {int(r["id"]): comparable(r) for r in rows}
        return found

    def check(self) -> None:
        self.connect.check(self.name)

    def stop(self) -> None:
        self.connect.delete(self.name)


# ---------------------------------------------------------------------------
# Reading the mirrors (a Spark process of its own, after `zync run` has stopped)


def read_mirrors(spec: Path) -> None:
    """--read-mirrors: every mirror's rows as comparable tuples, JSON into the spec's `out`."""
    from zync.config import load_target
    from zync.spark import spark_session

    job = json.loads(spec.read_text())
    schema = job.get("schema", SCHEMA)
    spark = spark_session(load_target(None))
    found: dict[str, dict[int, list]] = {}
    # One query a mirror, as a user reads one: a union of many mirrors' views is one plan holding
    # all their window stages, whose analysis and code generation grew faster than the mirrors
    # (25 at a time: 200 mirrors took over 20 minutes).
    failed: dict[str, str] = {}
    for table, mirror in job["mirrors"].items():
        query = (f"select id, name, amount, unix_millis(updated_at) as updated_at, "
                 f"cast(price as string) as price, seq from {schema}.{mirror}")
        try:
            rows = spark.sql(query).collect()
        except Exception as error:  # noqa: BLE001 - kept per mirror, so one failing read names its mirror
            # A mirror whose read fails is still compared: read again without whole-stage code
            # generation, and the first failure is reported beside the contents.
            failed[table] = f"{type(error).__name__}: {str(error)[:2000]}"
            print(f"reading {mirror} failed: {failed[table]}", file=sys.stderr, flush=True)
            spark.conf.set("spark.sql.codegen.wholeStage", "false")
            rows = spark.sql(query).collect()
            spark.conf.unset("spark.sql.codegen.wholeStage")
        for r in rows:
            found.setdefault(table, {})[r["id"]] = [r["name"], r["amount"], r["updated_at"], r["price"], r["seq"]]
    spark.stop()
    Path(job["out"]).write_text(json.dumps({"rows": found, "failed": failed}))


def mirror_contents(mirrors: dict[str, str], work: Path,
                    design: str = "local") -> tuple[dict[str, dict[int, tuple]], dict[str, str]]:
    """Every mirror's rows, read READ_MIRRORS_PER_JVM at a time, each group by a Spark process of its own.

    A JVM keeps every Delta table it has read in Delta's DeltaLog cache, with its snapshots' state
    Datasets and their plans: ~8 MB of heap a table here. One process reading 200 mirrors (a base and
    a raw table each) filled its 2 GB heap at 258 tables and spent its time in full GCs.
    """
    rows: dict[str, dict] = {}
    failed: dict[str, str] = {}
    names = list(mirrors)
    for start in range(0, len(names), READ_MIRRORS_PER_JVM):
        group = {t: mirrors[t] for t in names[start:start + READ_MIRRORS_PER_JVM]}
        spec, out = work / "read-mirrors.json", work / "mirrors-read.json"
        spec.write_text(json.dumps({"mirrors": group, "out": str(out),
                                    "schema": S3_SCHEMA if on_s3(design) else SCHEMA}))
        errors = work / "read-mirrors.err"
        with errors.open("w") as stderr:
            done = subprocess.run([str(BIN / "python"), str(Path(__file__).resolve()), "--read-mirrors", str(spec)],
                                  cwd=ROOT, text=True, stdout=subprocess.DEVNULL, stderr=stderr,
                                  env={**os.environ, **design_env(design)})
        if done.returncode != 0:
            # The first lines say what failed; a JVM trace's last ones only where.
            causes = [line for line in errors.read_text().splitlines()
                      if "Error" in line or "Exception" in line or line.startswith("Caused by")]
            raise SystemExit("reading the mirrors failed:\n" + "\n".join(causes[:12]) + f"\n(all of it: {errors})")
        read = json.loads(out.read_text())
        rows.update(read["rows"])
        failed.update(read["failed"])
    if failed:
        print(f"  {len(failed)} mirror reads failed once (read again without whole-stage codegen); "
              f"first: {next(iter(failed.values()))[:600]}", flush=True)
    return {t: {int(k): (v[0], float(v[1]), int(v[2]), str(v[3]), int(v[4]))
                for k, v in rows.get(t, {}).items()}
            for t in mirrors}, failed


def differences(found: dict[str, dict[int, tuple]], expected: dict[str, dict[int, tuple]]) -> dict:
    missing = sum(1 for t, rows in expected.items() for k in rows if k not in found.get(t, {}))
    extra = sum(1 for t, rows in found.items() for k in rows if k not in expected.get(t, {}))
    wrong = sum(1 for t, rows in expected.items() for k, v in rows.items()
                if k in found.get(t, {}) and found[t][k] != v)
    return {"rows": sum(len(r) for r in expected.values()), "missing": missing, "extra": extra, "wrong": wrong,
            "equal": missing == extra == wrong == 0}


# ---------------------------------------------------------------------------
# One N and skew


def cut_figures(pool: DeltaLog, connector: str) -> dict:
    """A raw pool's cut of `connector` (its transaction topic), from its Delta log: where its newest tagged
    commit left it (END offset, transactions expired, partitions), and how many commits moved it."""
    from zync.transactions import CUT_TAG, Cut

    last, tagged, moved = Cut(), False, []
    for version in sorted(int(f.stem) for f in pool.log.glob("*.json") if f.stem.isdigit()):
        path = pool.log / f"{version:020d}.json"
        tags = [json.loads(line).get("add", {}).get("tags", {}).get(CUT_TAG) for line in path.read_text().splitlines()
                if line.strip()]
        tag = next((t for t in tags if t), None)
        if tag and json.loads(tag).get(connector):
            cut, tagged = Cut.from_dict(json.loads(tag)[connector]), True
            if cut != last:
                moved.append(path.stat().st_mtime)
            last = cut
    found: dict[str, Any] = {"pool_commits_moving_it": len(moved)}
    if tagged:
        found.update({"end_offset": last.end_offset, "expired": last.expired, "partitions": len(last.offsets)})
    return found


def latency_figures(pairs: list[tuple[float, float | None]], start: float, end: float, rate: float) -> dict:
    """p50/p95/p99/max, missing, and the backlog over the middle and last quarters of the produce window."""
    latencies = [v - p for p, v in pairs if v is not None]
    seconds = end - start
    mid = mean_backlog(pairs, start + 3 * seconds / 8, start + 5 * seconds / 8)
    last = mean_backlog(pairs, start + 3 * seconds / 4, end)
    missing = sum(1 for _, v in pairs if v is None)
    figures: dict[str, Any] = {"changes": len(pairs), "missing": missing,
                               "backlog_mid": round(mid, 1), "backlog_end": round(last, 1)}
    if latencies:
        figures.update({f"p{int(q * 100)}_s": round(percentile(latencies, q), 2) for q in (0.5, 0.95, 0.99)})
        figures["max_s"] = round(max(latencies), 2)
    figures["bounded"] = missing == 0 and last <= 1.5 * mid + 5 * rate
    return figures


def run_one(target, tables: int, skew: str, args, threads: int | None = None, design: str = "local") -> dict:
    from stack import connect_worker
    from bench.rss import PeakRss
    from testkit.scratch import user_project
    from zync.tables import raw_table_name

    server = (f"w{tables:03d}{skew[0]}" + (f"t{threads}" if threads else "") + ("s3" if on_s3(design) else "")
              + ("p" if pooled(design) else "") + ("x" if whole_transactions(design) else "")
              + ("b" if dbt_beside(design) else ""))
    where = (("on the S3 server" if on_s3(design) else "on local disk") + (", one raw pool" if pooled(design) else "")
             + (" up to the transaction cut" if whole_transactions(design) else "")
             + (", dbt beside the cycle" if dbt_beside(design) else ""))
    print(f"\n== {tables} tables, {skew}, {where}: topics {server}.{DB_SCHEMA}.t001 ...", flush=True)
    result: dict[str, Any] = {"tables": tables, "skew": skew, "server": server, "rows": args.rows, "rate": args.rate,
                              "seconds": args.seconds, "threads": threads, "design": design,
                              "fold_after_rows": args.fold_after_rows,
                              "transactions": args.transactions}
    env = design_env(design)
    source = Source(target, server, tables, args.seed, transactions=args.transactions)
    connector = source.transaction_topic if whole_transactions(design) else None
    mirrors = {t: mirror_name(server, t) for t in source.tables}
    pool = f"raw_pool_{server}" if pooled(design) else None
    raw = {t: pool or raw_table_name(topic) for t, topic in zip(source.tables, source.topics)}
    topic_of = dict(zip(source.tables, source.topics))

    project = user_project(PROJECTS / server, {"mirrors.yml": mirror_file(server, source.topics, pool,
                                                                          whole_transactions(design))})
    compiled = zync("etl", "compile", cwd=project, env=env)
    if compiled.returncode != 0:
        raise SystemExit(f"zync etl compile failed:\n{compiled.stdout}{compiled.stderr}")
    anchor = Anchor(target, server, source.topics)
    connect_pid = connect_worker.service(target).pid()
    connect_rss = PeakRss(connect_pid) if connect_pid else None
    options = (("--dbt", "beside") if dbt_beside(design) else ()) + \
        (("--fold-after-rows", str(args.fold_after_rows)) if args.fold_after_rows is not None else ())
    run = ZyncRun(project, LOGS / f"run-{server}.log", threads, env=env, options=options)
    database = database_folder(design)
    logs = {t: MirrorLog(database, mirrors[t], raw[t], run.built_at, topic_of[t] if pool else None, connector)
            for t in source.tables}
    try:
        result["zync_run_ready_s"] = round(run.wait_ready(), 1)
        # The snapshot, then the first build on both sides.
        produce_start = time.time()
        source.snapshot(args.rows)
        produced = time.time()
        result["snapshot_produce_s"] = round(produced - produce_start, 1)
        print(f"  snapshot: {source.records:,} records in {produced - produce_start:.1f} s; first build ...",
              flush=True)
        first_build = {"zync": None, "jdbc_sink": None}
        deadline = time.monotonic() + args.build_timeout
        last_offset = args.rows - 1
        while None in first_build.values() and time.monotonic() < deadline:
            run.check()
            anchor.check()
            if first_build["zync"] is None:
                built = [visible_at(logs[t].commits(), PARTITION, last_offset) for t in source.tables]
                if None not in built:
                    first_build["zync"] = round(max(built) - produced, 1)
            if first_build["jdbc_sink"] is None:
                n, newest = anchor.count()
                if n >= tables * args.rows:
                    first_build["jdbc_sink"] = round(newest - produced, 1)
            time.sleep(1)
        result["first_build_s"] = first_build
        build_end = time.time()
        result["zync_first_build_cycles"] = cycle_summary(run.lines(), produce_start, build_end)
        print(f"  first build (s from the snapshot produced): {first_build}", flush=True)
        if None in first_build.values():
            raise SystemExit(f"the first build did not finish in {args.build_timeout:.0f} s: {first_build}; "
                             f"see {run.log} and {connect_worker.folder() / 'connect.log'}")
        mirror_kinds = {logs[t].kind for t in source.tables}
        result["mirror_kind"] = sorted(k for k in mirror_kinds if k)

        # The changes.
        mark = anchor.mark()
        choose = table_chooser(tables, skew, random.Random(args.seed + 1))
        print(f"  {args.rate:g} changes/s for {args.seconds:g} s ({skew}) ...", flush=True)
        start, end = source.stream(args.rate, args.seconds, choose)
        last = {}
        for c in source.changes:
            last[c.table] = max(last.get(c.table, -1), c.offset)
        deadline = time.monotonic() + args.drain
        zync_done = sink_done = False
        while time.monotonic() < deadline and not (zync_done and sink_done):
            run.check()
            anchor.check()
            zync_done = zync_done or all(logs[source.tables[t]].reach() >= o for t, o in last.items())
            sink_done = sink_done or anchor.count()[0] - mark >= len(source.changes)
            time.sleep(1)
        drained = time.time()
        result["drained_after_s"] = round(drained - end, 1)
        result["changes"] = len(source.changes)
        result["records"] = source.records
        if source.transactions:
            sizes = source.transaction_sizes
            result["source_transactions"] = {
                "count": len(sizes), "changes_mean": round(statistics.fmean(sizes), 2) if sizes else None,
                "tables_mean": round(statistics.fmean(source.transaction_tables), 2) if sizes else None,
                "multi_table_share": round(sum(1 for n in source.transaction_tables if n > 1) / len(sizes), 2)
                if sizes else None}
    finally:
        memory = run.stop()
        if connect_rss is not None:
            connect_rss.stop()
        anchor.stop()
    result["zync_run_memory"] = memory
    result["connect_peak_mb"] = connect_rss.python_kb // 1024 if connect_rss else None
    result["zync_cycles"] = cycle_summary(run.lines(), start, drained)

    # Latencies, per side.
    commits = {t: logs[source.tables[t]].commits() for t in range(tables)}
    ours = [(c.produced, visible_at(commits[c.table], PARTITION, c.offset)) for c in source.changes]
    arrived = anchor.arrivals(mark)
    theirs = [(c.produced, arrival_visible(c.seq, arrived.get((c.table, c.key), []))) for c in source.changes]
    result["zync"] = latency_figures(ours, start, end, args.rate)
    result["jdbc_sink"] = latency_figures(theirs, start, end, args.rate)
    if connector is not None:
        result["cut"] = cut_figures(DeltaLog(database / pool, None), connector)
        if result["cut"].get("partitions") is not None and source.transactions:
            # Every END behind the cut: BEGIN and END of each transaction, the END last.
            result["cut"]["every_transaction_behind_it"] = result["cut"]["end_offset"] == 2 * len(
                source.transaction_sizes) - 1
        print(f"  cut: {result['cut']}", flush=True)
    # Printed before the contents are read back: a read that fails keeps the figures.
    print(f"  latency: zync run {result['zync']}, JDBC sink {result['jdbc_sink']}\n"
          f"  memory: {memory}, Connect {result['connect_peak_mb']} MB", flush=True)

    # Contents against the source's final state.
    expected = source.expected()
    found, failed_reads = mirror_contents(mirrors, PROJECTS / server, design)
    result["zync"]["contents"] = differences(found, expected)
    result["zync"]["contents"]["failed_reads"] = failed_reads
    result["jdbc_sink"]["contents"] = differences(anchor.contents(source.tables), expected)
    print(f"  zync run:  {result['zync']}\n  JDBC sink: {result['jdbc_sink']}\n"
          f"  cycles: {result['zync_cycles']}", flush=True)
    return result


# ---------------------------------------------------------------------------
# Report


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def print_table(results: list[dict]) -> None:
    head = ("tables", "skew", "side", "1st build s", "p50 s", "p95 s", "p99 s", "max s", "missing",
            "backlog mid>end", "bounded", "rows equal", "peak RSS MB", "cycle p50/max s")
    rows = []
    for r in results:
        ours = "zync run" + (f" --threads {r['threads']}" if r.get("threads") else "") + (
            f" ({r['design']})" if r.get("design", "local") != "local" else "")
        for side, label in (("zync", ours), ("jdbc_sink", "JDBC sink")):
            f = r[side]
            if side == "zync":
                m = r["zync_run_memory"]
                rss = f"{m['peak_python_mb']}+{m['peak_jvm_mb']}"
                cycles = r["zync_cycles"]
                cycle = f"{cycles.get('p50_s', '-')}/{cycles.get('max_s', '-')}"
            else:
                rss, cycle = fmt(r.get("connect_peak_mb")), "-"
            rows.append((r["tables"], r["skew"], label, fmt(r["first_build_s"][side]), fmt(f.get("p50_s")),
                         fmt(f.get("p95_s")), fmt(f.get("p99_s")), fmt(f.get("max_s")), f["missing"],
                         f"{f['backlog_mid']:g}>{f['backlog_end']:g}", fmt(f["bounded"]),
                         fmt(f["contents"]["equal"]), rss, cycle))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    print()
    for line in (head, *rows):
        print(" | ".join(str(x).rjust(w) for x, w in zip(line, widths)))


def checks(results: list[dict]) -> list[dict]:
    """The targets, PASS or FAIL, for the N this run measured."""
    found = []
    for r in results:
        goal = TARGETS.get(r["tables"])
        if goal is None:
            continue
        f = r["zync"]
        for key, limit in goal.items():
            if key == "bounded":
                ok, said = f["bounded"], f"lag bounded ({f['backlog_mid']:g} -> {f['backlog_end']:g} waiting)"
            else:
                value = f.get(key)
                ok, said = value is not None and value <= limit, f"{key[:-2]} {fmt(value)} s <= {limit:g} s"
            found.append({"tables": r["tables"], "skew": r["skew"], "design": r.get("design", "local"),
                          "check": said, "pass": bool(ok)})
    for skew, design in sorted({(r["skew"], r.get("design", "local")) for r in results}):
        by_n = sorted((r["tables"], r["zync_run_memory"]["peak_python_mb"] + r["zync_run_memory"]["peak_jvm_mb"])
                      for r in results if r["skew"] == skew and r.get("design", "local") == design)
        if len(by_n) >= 2:
            (small, low), (large, high) = by_n[0], by_n[-1]
            found.append({"tables": f"{small}->{large}", "skew": skew, "design": design,
                          "pass": high <= MEMORY_GROWTH * low,
                          "check": f"memory bounded in N: {low} MB -> {high} MB (<= {MEMORY_GROWTH}x)"})
    for r in results:
        for side in ("zync", "jdbc_sink"):
            found.append({"tables": r["tables"], "skew": r["skew"], "design": r.get("design", "local"),
                          "pass": r[side]["contents"]["equal"],
                          "check": f"{'zync run' if side == 'zync' else 'JDBC sink'}: rows equal the source's "
                                   f"final state ({r[side]['contents']})"})
    return found


def s3_ratios(results: list[dict]) -> list[dict]:
    """Per N, skew and --threads measured on both: zync run's p50 and p99 on the S3 server over local disk's
    (each with and without a raw pool)."""
    found = []
    for r in results:
        if not on_s3(r.get("design", "local")):
            continue
        twin = "pool" if pooled(r["design"]) else "local"
        local = next((l for l in results if l.get("design", "local") == twin and
                      (l["tables"], l["skew"], l.get("threads")) == (r["tables"], r["skew"], r.get("threads"))), None)
        if local is None:
            continue
        ratio = {q: round(r["zync"][f"{q}_s"] / local["zync"][f"{q}_s"], 2)
                 if r["zync"].get(f"{q}_s") and local["zync"].get(f"{q}_s") else None for q in ("p50", "p99")}
        found.append({"tables": r["tables"], "skew": r["skew"], "threads": r.get("threads"), "design": r["design"],
                      **ratio})
    return found


def machine() -> dict:
    memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cores": os.cpu_count(), "memory_gb": round(memory_kb / 2 ** 20, 1), "cpu": model,
            "system": f"{platform.system()} {platform.release()}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, action="append", help="tables (repeatable; default 10, 50, 200)")
    parser.add_argument("--skew", choices=("uniform", "zipf"), action="append",
                        help="how changes spread over the tables (repeatable; default both)")
    parser.add_argument("--rate", type=float, default=100.0, help="change events per second (default 100)")
    parser.add_argument("--seconds", type=float, default=120.0, help="seconds of changes (default 120)")
    parser.add_argument("--rows", type=int, default=2000, help="snapshot rows per table (default 2000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drain", type=float, default=600.0, help="seconds to wait for the last changes")
    parser.add_argument("--build-timeout", type=float, default=1800.0, help="seconds to wait for the first build")
    parser.add_argument("--threads", type=int, action="append",
                        help="zync run --threads N (repeatable: each N and skew runs once per value, alternating)")
    parser.add_argument("--designs", default="local",
                        help="where zync run's tables are, comma-separated, each N and skew running once per "
                             "design, alternating: local (local disk, the default), s3 (the S3 server the "
                             "benchmark starts, `zync up --s3`), pool and s3-pool (the same, every topic in one "
                             "raw pool: `pool:` in the mirror entry), pool-beside (pool, with `zync run --dbt beside`)")
    parser.add_argument("--transactions", action=argparse.BooleanOptionalAction, default=None,
                        help="the source writes its changes in multi-table transactions with Debezium's transaction "
                             "metadata (Source), for every design of the run (default: when --designs has pool-txn)")
    parser.add_argument("--fold-after-rows", type=int,
                        help="zync run --fold-after-rows N for every design (default: zync run's own): a small N "
                             "makes the mirrors fold while changes flow")
    parser.add_argument("--keep", action="store_true", help="leave the benchmark's services running")
    parser.add_argument("--read-mirrors", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local", "ZYNC_PROJECT_DIR": str(ROOT)})
    if args.read_mirrors:
        read_mirrors(args.read_mirrors)
        return
    from zync.config import load_target

    tables = args.tables or [10, 50, 200]
    skews = args.skew or ["uniform", "zipf"]
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    if set(designs) - set(DESIGNS):
        parser.error(f"--designs: of {', '.join(DESIGNS)}")
    if args.transactions is None:
        args.transactions = any(whole_transactions(d) for d in designs)
    command = " ".join(["bench/wide.py", *sys.argv[1:]])
    date = dt.datetime.now(dt.timezone.utc)
    if STATE.exists():
        zync("down", "--purge", cwd=ROOT)
        shutil.rmtree(STATE, ignore_errors=True)
    LOGS.mkdir(parents=True)
    OUT.mkdir(parents=True, exist_ok=True)
    up = zync("up", "--connect", *(["--s3"] if any(on_s3(d) for d in designs) else []), cwd=ROOT)
    if up.returncode != 0:
        raise SystemExit(f"zync up --connect failed:\n{up.stdout}{up.stderr}")
    results: list[dict] = []
    began = time.monotonic()
    try:
        target = load_target(None)
        turn = 0
        for n in tables:
            for skew in skews:
                # Designs compared (zync run --threads, where the tables are) alternate: the order
                # flips from one N and skew to the next.
                order = [(threads, design) for threads in (args.threads or [None]) for design in designs]
                for threads, design in (order if turn % 2 == 0 else order[::-1]):
                    results.append(run_one(target, n, skew, args, threads, design))
                turn += 1
    finally:
        if not args.keep:
            zync("down", cwd=ROOT)
    print(f"\n{command}\n{date:%Y-%m-%d %H:%M} UTC, {machine()}; whole run {time.monotonic() - began:.0f} s")
    print_table(results)
    verdicts = checks(results)
    ratios = s3_ratios(results)
    for r in ratios:
        print(f"{r['tables']} tables, {r['skew']}, {r['design']}: S3 / local disk, zync run's latency p50 {r['p50']}x, "
              f"p99 {r['p99']}x")
    print()
    for v in verdicts:
        where = f" ({v['design']})" if v.get("design", "local") != "local" else ""
        print(f"{'PASS' if v['pass'] else 'FAIL'}  {v['tables']} tables, {v['skew']}{where}: {v['check']}")
    path = OUT / f"wide-{date:%Y-%m-%dT%H%M}.json"
    path.write_text(json.dumps({"command": command, "date": date.isoformat(timespec="seconds"), "machine": machine(),
                                "whole_run_s": round(time.monotonic() - began), "runs": results,
                                "s3_over_local": ratios,
                                "checks": verdicts}, indent=2))
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
