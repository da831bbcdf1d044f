"""Debezium's transaction metadata and a connector's consistent cut: the contract's one home.

With `provide.transaction.metadata=true` a Debezium source connector tags every change with
`transaction {id, total_order, data_collection_order}` and writes a BEGIN and an END event per
source transaction to its transaction topic (`<topic.prefix>.transaction` unless renamed), in
commit order; an END gives the transaction's event count per data collection (`schema.table`),
whose topic is `<topic.prefix>.<data collection>`.

A cut is the newest END such that every transaction up to it has all of its events (restricted to
the topics the project ingests) in the raw pool, and, per data topic and partition, the last offset
at or before it. Readers that stop every topic at the same cut never see half of a transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TRANSACTION_TOPIC_SUFFIX = ".transaction"  # Debezium's default transaction topic: <topic.prefix>.transaction
BEGIN, END = "BEGIN", "END"
# Debezium's source.snapshot values of a change read by the initial snapshot (not a transaction of its own).
SNAPSHOT_VALUES = frozenset({"true", "first", "first_in_data_collection", "last_in_data_collection", "last"})
SNAPSHOT_LAST = "last"
# The cut's pseudo-transaction of the initial snapshot: its changes carry no transaction, and are whole
# once the snapshot's last record is in (or a streamed change is, which comes after it).
SNAPSHOT = "\x00snapshot"
DEFAULT_EXPIRE_AFTER_S = 600.0  # a transaction never whole is given up on this long after its END was read
# The Kafka header egress gives each record of an output that takes whole source transactions: its source
# transaction's id (transaction_key's), so a consumer can apply one transaction's records together.
OUTPUT_TRANSACTION_HEADER = "zync.transaction.id"
OUTPUT_TRANSACTION_COLUMN = "transaction"  # the output table's column of an out row's source transaction id
CUT_TAG = "zync.pool.cut"  # a raw pool file's tag: {transaction topic: the cut after its commit (Cut.to_json)}


# The raw sources' meta (models/raw/__sources.yml): a data topic's connector's transaction topic, and on the
# transaction topic's own source, its connector's topic prefix.
TRANSACTIONS_META = "zync_transactions"
TRANSACTIONS_OF_META = "zync_transactions_of"
# A connector's cut is kept in the raw pool itself, as a row of the pool commit that moves it: its topic is
# CUT_TOPIC_PREFIX + the transaction topic (a name Kafka cannot give a topic), its offset counts the cut's
# moves, its value the cut (cut_value). So a reader's query sees the rows and the cut of one pool version:
# Delta pins one snapshot of a table per query. The pool's view <pool>__cut shows each connector's newest
# cut (CUT_COLUMNS); the view <pool>__cuts shows every cut row, the cut's history. Pooled raw views of the
# connector's topics show their rows up to the newest (ingest/pool_view.py).
CUT_TOPIC_PREFIX = "zync:cut:"
CUT_TABLE_SUFFIX = "__cut"
CUT_COLUMNS = (("connector", "string"), ("transaction", "string"), ("committed_at", "timestamp"),
               ("end_offset", "bigint"), ("expired", "bigint"), ("cut_at", "timestamp"),
               ("offsets", "map<string,map<int,bigint>>"))
# A cut row's value as from_json reads it (JSON objects' keys are text: the partitions are cast after).
CUT_VALUE_DDL = ("STRUCT<`connector`: STRING, `transaction`: STRING, `committed_ms`: BIGINT, `end_offset`: BIGINT, "
                 "`expired`: BIGINT, `cut_ms`: BIGINT, `offsets`: MAP<STRING, MAP<STRING, BIGINT>>>")


CUTS_VIEW_SUFFIX = "__cuts"  # the pool's view of every cut row (the cuts' history), `position` ascending
# A cut every base of the connector's mirrors holds exactly, with each base's Delta version (service/
# settled_cuts.py): a row per settled cut in the Delta table <pool>__settled, appended by `zync run`.
# `versions`: mirror (database.name) -> the version of its base (<mirror>__base) holding the cut.
SETTLED_TABLE_SUFFIX = "__settled"
SETTLED_COLUMNS = (("connector", "string"), ("end_offset", "bigint"), ("transaction", "string"),
                   ("committed_at", "timestamp"), ("settled_at", "timestamp"), ("versions", "map<string,bigint>"))


def cut_table_name(pool: str) -> str:
    return pool + CUT_TABLE_SUFFIX


def cuts_view_name(pool: str) -> str:
    return pool + CUTS_VIEW_SUFFIX


def settled_table_name(pool: str) -> str:
    return pool + SETTLED_TABLE_SUFFIX


def cut_topic(transaction_topic: str) -> str:
    """The pool topic of a connector's cut rows."""
    return CUT_TOPIC_PREFIX + transaction_topic


def cut_value(transaction_topic: str, cut: "Cut", cut_ms: int) -> dict:
    """A cut row's value (CUT_VALUE_DDL): the cut, its connector and when ingest reached it."""
    return {"connector": transaction_topic, **cut.to_dict(), "cut_ms": cut_ms}


# Debezium's PostgreSQL connector names a transaction `<xid>:<lsn>` with the LSN of the event at hand, so the
# changes, BEGIN and END of one transaction differ in it (Debezium 3.0): they share the xid. Other connectors'
# ids (MySQL's GTID `<uuid>:<n>`, SQL Server's and Db2's three hex parts) are the transaction's as they are.
_POSTGRES_ID = re.compile(r"(\d+):\d+")


def transaction_key(transaction_id: str) -> str:
    """What names one source transaction in the ids Debezium gives its changes and its BEGIN and END."""
    postgres = _POSTGRES_ID.fullmatch(transaction_id)
    return postgres.group(1) if postgres else transaction_id


def connector_prefix(topic: str) -> str:
    """The topic prefix of a Debezium data topic (`<prefix>.<schema>.<table>`): pg.public.orders -> pg."""
    parts = topic.rsplit(".", 2)
    return parts[0] if len(parts) == 3 else topic


def transaction_topic(prefix: str) -> str:
    return prefix + TRANSACTION_TOPIC_SUFFIX


@dataclass(frozen=True)
class Change:
    """What the cut needs of one data change: where it is and its transaction (None: none, SNAPSHOT)."""

    topic: str
    partition: int
    offset: int
    transaction: str | None
    collection_order: int | None = None  # its position within its transaction's changes to this table
    snapshot_last: bool = False  # the initial snapshot's last record


@dataclass(frozen=True)
class Boundary:
    """A BEGIN or END event of the transaction topic."""

    offset: int
    status: str
    transaction: str
    ts_ms: int | None = None
    counts: dict[str, int] = field(default_factory=dict)  # END: events per data collection (schema.table)


@dataclass(frozen=True)
class Cut:
    """A connector's cut: the last whole transaction's END (offset -1: none yet) and every data topic's
    partition's last offset at or before it (-1: none)."""

    end_offset: int = -1
    transaction: str | None = None
    committed_ms: int | None = None  # the END's ts_ms: the source's commit time of the last whole transaction
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    expired: int = 0  # transactions given up on (never whole within the bound), counted since the first cut

    def to_dict(self) -> dict:
        return {"end_offset": self.end_offset, "transaction": self.transaction, "committed_ms": self.committed_ms,
                "expired": self.expired,
                "offsets": {t: {str(p): o for (tt, p), o in sorted(self.offsets.items()) if tt == t}
                            for t in sorted({t for t, _ in self.offsets})}}

    @classmethod
    def from_dict(cls, data: dict) -> Cut:
        return cls(int(data["end_offset"]), data.get("transaction"), data.get("committed_ms"),
                   {(t, int(p)): int(o) for t, parts in data.get("offsets", {}).items() for p, o in parts.items()},
                   int(data.get("expired", 0)))


def cut_fields(value: dict | None) -> dict | None:
    """What change_of and boundary_of read of a decoded Debezium value (a change's or a transaction
    topic's event), so that the rest of it need not be kept."""
    if not isinstance(value, dict):
        return None
    source = value.get("source")
    return {"transaction": value.get("transaction"),
            "source": {"snapshot": source.get("snapshot")} if isinstance(source, dict) else None,
            **{k: value[k] for k in ("status", "id", "ts_ms", "data_collections") if k in value}}


def change_of(topic: str, partition: int, offset: int, value: dict | None) -> Change:
    """A data change's place in its source transaction, from its decoded Debezium value (None: a tombstone)."""
    if value is None:
        return Change(topic, partition, offset, None)
    transaction = value.get("transaction")
    if transaction:
        order = transaction.get("data_collection_order")
        return Change(topic, partition, offset, transaction_key(str(transaction["id"])),
                      None if order is None else int(order))
    snapshot = str((value.get("source") or {}).get("snapshot") or "false").lower()
    if snapshot in SNAPSHOT_VALUES:
        return Change(topic, partition, offset, SNAPSHOT, snapshot_last=snapshot == SNAPSHOT_LAST)
    return Change(topic, partition, offset, None)


def boundary_of(offset: int, value: dict | None) -> Boundary | None:
    """A transaction topic's event as a Boundary (None: a tombstone, or not a BEGIN/END)."""
    if not value or value.get("status") not in (BEGIN, END):
        return None
    counts = {str(c["data_collection"]): int(c["event_count"]) for c in value.get("data_collections") or []}
    ts = value.get("ts_ms")
    return Boundary(offset, value["status"], transaction_key(str(value["id"])), None if ts is None else int(ts), counts)
