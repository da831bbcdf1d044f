"""Avro schemas the ingest tests produce with: a Debezium change event and its key."""

from __future__ import annotations

KEY = {"type": "record", "name": "Key", "namespace": "ingest.test", "fields": [{"name": "id", "type": "long"}]}


def row(fields: list[dict]) -> dict:
    return {"type": "record", "name": "Row", "namespace": "ingest.test", "fields": fields}


ROW_V1 = row([{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
              {"name": "qty", "type": "int"}])

SOURCE = {"type": "record", "name": "Source", "namespace": "io.debezium.connector.mysql", "fields": [
    {"name": "version", "type": "string"}, {"name": "connector", "type": "string"},
    {"name": "name", "type": "string"}, {"name": "ts_ms", "type": "long"},
    {"name": "db", "type": "string"}, {"name": "table", "type": ["null", "string"], "default": None},
]}


def envelope(row_schema: dict) -> dict:
    """Debezium's value shape: before/after (optional rows), source, op, ts_ms."""
    return {"type": "record", "name": "Envelope", "namespace": "ingest.test", "fields": [
        {"name": "before", "type": ["null", row_schema], "default": None},
        {"name": "after", "type": ["null", "Row"], "default": None},
        {"name": "source", "type": SOURCE},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ]}


def source(ts: int = 1_700_000_000_000) -> dict:
    return {"version": "2.7.0", "connector": "mysql", "name": "shop", "ts_ms": ts, "db": "shop", "table": "rows"}


def event(op: str, after: dict | None, before: dict | None = None) -> dict:
    return {"before": before, "after": after, "source": source(), "op": op, "ts_ms": 1_700_000_000_123}
