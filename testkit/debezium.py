"""Debezium change events as its PostgreSQL connector writes them, for tests and benchmarks that produce
them straight to Kafka (no database): the Avro key and envelope schemas of one table, and its events.

Names follow the connector: topic `<server>.<schema>.<table>`, key record `<topic>.Key`, value record
`<topic>.Envelope` with `before`/`after` of record `<topic>.Value`, `source` of record
`io.debezium.connector.postgresql.Source`, `op`, `ts_ms`. A sink that recognises Debezium's envelope
(Debezium's JDBC sink looks for `Envelope` in the value's schema name) takes these as it takes the
connector's own. A delete is an op `d` event (before = the row, after = null) followed by a tombstone
(a null value), as the connector writes with its default `tombstones.on.delete`.

With `provide.transaction.metadata` the envelope also carries `transaction` (record `event.block`:
the transaction's id, the change's place in it and in its table's changes in it), and the connector
writes a BEGIN and an END event per transaction to `<server>.transaction` (key and value records of
`io.debezium.connector.common`; the END with its event count per data collection, `schema.table`).
Debezium 3.0's PostgreSQL connector names a transaction `<xid>:<lsn>`, the LSN of the event at hand.
"""

from __future__ import annotations

from typing import Any

SOURCE = {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql", "fields": [
    {"name": "version", "type": "string"},
    {"name": "connector", "type": "string"},
    {"name": "name", "type": "string"},
    {"name": "ts_ms", "type": "long"},
    {"name": "snapshot", "type": ["string", "null"], "default": "false"},
    {"name": "db", "type": "string"},
    {"name": "sequence", "type": ["null", "string"], "default": None},
    {"name": "schema", "type": "string"},
    {"name": "table", "type": "string"},
    {"name": "txId", "type": ["null", "long"], "default": None},
    {"name": "lsn", "type": ["null", "long"], "default": None},
    {"name": "xmin", "type": ["null", "long"], "default": None},
]}
VERSION = "3.1.2.Final"
# The envelope's `transaction` block (Debezium's TransactionMonitor), and the transaction topic's records.
TRANSACTION_BLOCK = {"type": "record", "name": "block", "namespace": "event", "fields": [
    {"name": "id", "type": "string"},
    {"name": "total_order", "type": "long"},
    {"name": "data_collection_order", "type": "long"},
]}
TRANSACTION_KEY = {"type": "record", "name": "TransactionMetadataKey", "namespace": "io.debezium.connector.common",
                   "fields": [{"name": "id", "type": "string"}]}
TRANSACTION_VALUE = {"type": "record", "name": "TransactionMetadataValue", "namespace": "io.debezium.connector.common",
                     "fields": [
    {"name": "status", "type": "string"},
    {"name": "id", "type": "string"},
    {"name": "event_count", "type": ["null", "long"], "default": None},
    {"name": "data_collections", "type": ["null", {"type": "array", "items": {
        "type": "record", "name": "ConnectDefault", "namespace": "io.confluent.connect.avro", "fields": [
            {"name": "data_collection", "type": "string"},
            {"name": "event_count", "type": "long"}]}}], "default": None},
    {"name": "ts_ms", "type": "long"},
]}


def topic(server: str, schema: str, table: str) -> str:
    return f"{server}.{schema}.{table}"


def key_schema(server: str, schema: str, table: str, fields: list[dict]) -> dict:
    """The key record of a table: its primary key's columns."""
    return {"type": "record", "name": "Key", "namespace": topic(server, schema, table), "fields": fields}


def value_schema(server: str, schema: str, table: str, fields: list[dict], transaction: bool = False) -> dict:
    """The change-event envelope of a table whose row has `fields` (Avro fields, optional ones as
    ["null", type] unions with a null default, as the connector writes a nullable column); with
    `transaction`, its optional `transaction` block (provide.transaction.metadata)."""
    namespace = topic(server, schema, table)
    row = {"type": "record", "name": "Value", "namespace": namespace, "fields": fields}
    return {"type": "record", "name": "Envelope", "namespace": namespace, "fields": [
        {"name": "before", "type": ["null", row], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": SOURCE},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
        *([{"name": "transaction", "type": ["null", TRANSACTION_BLOCK], "default": None}] if transaction else []),
    ]}


def source(server: str, database: str, schema: str, table: str, ts_ms: int, lsn: int | None = None,
           snapshot: bool | str = False, tx_id: int | None = None) -> dict:
    """The `source` block of one event: where and when the change was read. `snapshot`: True for a
    snapshot read ("true"), or Debezium's marker itself ("last": the snapshot's last record)."""
    marker = snapshot if isinstance(snapshot, str) else "true" if snapshot else "false"
    return {"version": VERSION, "connector": "postgresql", "name": server, "ts_ms": ts_ms,
            "snapshot": marker, "db": database, "sequence": None, "schema": schema,
            "table": table, "txId": tx_id, "lsn": lsn, "xmin": None}


def event(op: str, after: dict | None, before: dict | None, source_block: dict, ts_ms: int,
          transaction: dict | None = None) -> dict[str, Any]:
    """One envelope: op r (snapshot read), c, u or d; `transaction`: its block (transaction_block)."""
    envelope = {"before": before, "after": after, "source": source_block, "op": op, "ts_ms": ts_ms}
    if transaction is not None:
        envelope["transaction"] = transaction
    return envelope


def transaction_topic(server: str) -> str:
    return f"{server}.transaction"


def transaction_id(xid: int, lsn: int) -> str:
    """A transaction's id as the PostgreSQL connector gives it with an event: `<xid>:<lsn>`."""
    return f"{xid}:{lsn}"


def transaction_block(transaction_id_: str, total_order: int, data_collection_order: int) -> dict:
    """A change's `transaction`: its transaction, its place among the transaction's changes (from 1) and among
    the transaction's changes to its table (from 1)."""
    return {"id": transaction_id_, "total_order": total_order, "data_collection_order": data_collection_order}


def transaction_event(status: str, transaction_id_: str, ts_ms: int,
                      counts: dict[str, int] | None = None) -> dict[str, Any]:
    """A BEGIN or END of the transaction topic; an END's `counts`: events per data collection (schema.table)."""
    if status == "BEGIN":
        return {"status": status, "id": transaction_id_, "event_count": None, "data_collections": None,
                "ts_ms": ts_ms}
    counts = counts or {}
    return {"status": status, "id": transaction_id_, "event_count": sum(counts.values()),
            "data_collections": [{"data_collection": c, "event_count": n} for c, n in counts.items()],
            "ts_ms": ts_ms}


# A connector's tables in Connector: an id and a text.
KEY_FIELDS = [{"name": "id", "type": "int"}]
ROW_FIELDS = [{"name": "id", "type": "int"}, {"name": "v", "type": ["null", "string"], "default": None}]


class Connector:
    """A Debezium connector's topics with transaction metadata, sent through a test producer (`topic`, `send`,
    `raw`, `registry`, `flush`): tables a and b (ROW_FIELDS) and its transaction topic."""

    def __init__(self, producer, server: str):
        self.producer, self.server = producer, server
        self.tables = {t: producer.topic(topic(server, "public", t)) for t in ("a", "b")}
        self.transactions = producer.topic(transaction_topic(server))
        self.ts = 1_000

    def change(self, table: str, row_id: int, xid: int, order: int) -> dict:
        block = source(self.server, "db", "public", table, self.ts, lsn=xid * 100 + order, tx_id=xid)
        return event("c", {"id": row_id, "v": f"{table}{row_id}"}, None, block, self.ts,
                     transaction_block(transaction_id(xid, xid * 100), order, 1))

    def send_change(self, table: str, row_id: int, xid: int, order: int) -> None:
        self.producer.send(self.tables[table], key_schema(self.server, "public", table, KEY_FIELDS),
                           value_schema(self.server, "public", table, ROW_FIELDS, transaction=True),
                           [({"id": row_id}, self.change(table, row_id, xid, order))])

    def send_poison(self, table: str, row_id: int) -> None:
        """A record whose key decodes and whose value is not Avro in the Confluent wire format."""
        from zync.wire import encode

        key_writer = self.producer.registry.register(
            f"{self.tables[table]}-key", key_schema(self.server, "public", table, KEY_FIELDS))
        self.producer.raw(self.tables[table], encode(key_writer, {"id": row_id}), b"not a change event")
        self.producer.flush()

    def boundary(self, status: str, xid: int, counts: dict[str, int] | None = None) -> None:
        """The transaction's BEGIN or END (with its `counts` per table, `public.a`)."""
        self.ts += 10
        tid = transaction_id(xid, xid * 100)
        self.producer.send(self.transactions, TRANSACTION_KEY, TRANSACTION_VALUE,
                           [({"id": tid}, transaction_event(status, tid, self.ts, counts))])
