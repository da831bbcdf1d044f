"""Debezium change events as its PostgreSQL connector writes them, for tests and benchmarks that produce
them straight to Kafka (no database): the Avro key and envelope schemas of one table, and its events.

Names follow the connector: topic `<server>.<schema>.<table>`, key record `<topic>.Key`, value record
`<topic>.Envelope` with `before`/`after` of record `<topic>.Value`, `source` of record
`io.debezium.connector.postgresql.Source`, `op`, `ts_ms`. A sink that recognises Debezium's envelope
(Debezium's JDBC sink looks for `Envelope` in the value's schema name) takes these as it takes the
connector's own. A delete is an op `d` event (before = the row, after = null) followed by a tombstone
(a null value), as the connector writes with its default `tombstones.on.delete`.
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


def topic(server: str, schema: str, table: str) -> str:
    return f"{server}.{schema}.{table}"


def key_schema(server: str, schema: str, table: str, fields: list[dict]) -> dict:
    """The key record of a table: its primary key's columns."""
    return {"type": "record", "name": "Key", "namespace": topic(server, schema, table), "fields": fields}


def value_schema(server: str, schema: str, table: str, fields: list[dict]) -> dict:
    """The change-event envelope of a table whose row has `fields` (Avro fields, optional ones as
    ["null", type] unions with a null default, as the connector writes a nullable column)."""
    namespace = topic(server, schema, table)
    row = {"type": "record", "name": "Value", "namespace": namespace, "fields": fields}
    return {"type": "record", "name": "Envelope", "namespace": namespace, "fields": [
        {"name": "before", "type": ["null", row], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": SOURCE},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ]}


def source(server: str, database: str, schema: str, table: str, ts_ms: int, lsn: int | None = None,
           snapshot: bool = False) -> dict:
    """The `source` block of one event: where and when the change was read."""
    return {"version": VERSION, "connector": "postgresql", "name": server, "ts_ms": ts_ms,
            "snapshot": "true" if snapshot else "false", "db": database, "sequence": None, "schema": schema,
            "table": table, "txId": None, "lsn": lsn, "xmin": None}


def event(op: str, after: dict | None, before: dict | None, source_block: dict, ts_ms: int) -> dict[str, Any]:
    """One envelope: op r (snapshot read), c, u or d."""
    return {"before": before, "after": after, "source": source_block, "op": op, "ts_ms": ts_ms}
