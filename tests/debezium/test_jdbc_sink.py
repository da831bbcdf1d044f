"""zync-shaped output records -> Debezium's JDBC sink -> a PostgreSQL table.

The records are what `zync to-kafka` publishes (docs/reference/egress.md): Avro in the Confluent wire
format, key and value schemas derived from Spark types by egress/schemas.py (every field
optional), a partial update with a schema of only its fields, a tombstone for a delete.
"""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

from pyspark.sql import types as T

from zync import kafka_client
from zync.avro_types import avro_schema_for_struct
from zync.wire import Registry, encode

DB = "dbz_sink"
TOPIC = "dbz_NewInvoices"
TABLE = "new_invoices"
CONNECTOR = "dbz-new-invoices-sink"

KEY = T.StructType([T.StructField("id", T.LongType())])
VALUE = T.StructType([
    T.StructField("id", T.LongType()),
    T.StructField("customer", T.StringType()),
    T.StructField("amount", T.DecimalType(10, 2)),
    T.StructField("status", T.StringType()),
    T.StructField("paid", T.BooleanType()),
    T.StructField("updated_at", T.TimestampType()),
    T.StructField("due_on", T.DateType()),
])
AT = dt.datetime(2024, 3, 10, 12, 0, tzinfo=dt.timezone.utc)


def invoice(ident: int, status: str) -> dict:
    return {"id": ident, "customer": f"customer {ident}", "amount": Decimal(ident * 100) + Decimal("0.25"),
            "status": status, "paid": ident % 2 == 0, "updated_at": AT + dt.timedelta(minutes=ident, microseconds=7),
            "due_on": dt.date(2024, 4, ident)}


def wait_rows(debezium, expected: list[dict], timeout_s: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            rows = debezium.query(
                f"select id, customer, amount, status, paid, updated_at, due_on from {TABLE} order by id", DB)
        except Exception:  # noqa: BLE001 - the sink has not created the table yet
            rows = None
        if rows == expected or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    status = debezium.connect.status(CONNECTOR)
    assert rows == expected, f"{TABLE} holds {rows}; sink status: {status}"
    return rows


def test_the_sink_upserts_applies_partial_updates_and_deletes_on_tombstones(debezium, target):
    registry = Registry(target.schema_registry)
    key_writer = registry.register(f"{TOPIC}-key", avro_schema_for_struct(KEY, f"{TOPIC}_key", "zync"))
    full = registry.register(f"{TOPIC}-value", avro_schema_for_struct(VALUE, f"{TOPIC}_value", "zync"))
    partial = registry.register(f"{TOPIC}-value", avro_schema_for_struct(
        VALUE, f"{TOPIC}_value", "zync", only_fields=["id", "status"]))
    kafka_client.ensure_topic(target, TOPIC)
    producer = kafka_client.producer(target)

    def send(records: list[tuple[int, object]]) -> None:
        for ident, value in records:
            writer = full if value is not None and "customer" in value else partial
            producer.produce(TOPIC, key=encode(key_writer, {"id": ident}),
                             value=None if value is None else encode(writer, value))
        assert producer.flush(30) == 0

    debezium.database(DB)
    send([(1, invoice(1, "new")), (2, invoice(2, "new")), (3, invoice(3, "new"))])
    debezium.sink(CONNECTOR, [TOPIC], DB, **{"table.name.format": TABLE})

    def row(ident: int, status: str) -> dict:
        v = invoice(ident, status)
        # An instant arrives as its UTC wall time, to the microsecond (egress names it Debezium's
        # MicroTimestamp); PostgreSQL renders both as ISO text in JSON.
        return {"id": ident, "customer": v["customer"], "amount": v["amount"], "status": status, "paid": v["paid"],
                "updated_at": v["updated_at"].replace(tzinfo=None).isoformat(), "due_on": v["due_on"].isoformat()}

    wait_rows(debezium, [row(1, "new"), row(2, "new"), row(3, "new")])

    # A partial update names only `status`: the other columns keep their values.
    send([(2, {"id": 2, "status": "paid"}), (3, None)])  # then a tombstone deletes invoice 3
    wait_rows(debezium, [row(1, "new"), row(2, "paid")])

    # The table's columns, as the sink created them from the registered schemas.
    columns = {c["column_name"]: c["data_type"] for c in debezium.query(
        f"select column_name, data_type from information_schema.columns where table_name = '{TABLE}'", DB)}
    assert columns["amount"] == "numeric" and columns["paid"] == "boolean" and columns["status"] == "text"
    assert columns["updated_at"].startswith("timestamp") and columns["due_on"] == "date", columns
    print(f"\n{TABLE} columns as the JDBC sink created them: {columns}")
    debezium.delete(CONNECTOR)
