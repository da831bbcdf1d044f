"""Spark table names, and the Kafka envelope every zync table carries (its type and its check).

The envelope is what exactly-once rests on: a raw table's resume point is its
largest `kafka.offset` per partition, an output table's out rows are aligned with
the output topic's offsets by it. So a table without it is refused, whoever reads it.
"""

from __future__ import annotations

import re

from pyspark.sql import types as T

from zync.config import Target
from zync.errors import ZyncError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
ENVELOPE_FIELDS = ("topic", "partition", "offset")
DEAD_LETTERS_SUFFIX = "__dead_letters"


def snake(name: str) -> str:
    """A name in snake case (InvoiceStatus -> invoice_status), as generated names use."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()


def raw_table_name(topic: str) -> str:
    """The default raw table of a topic: raw_ + the topic in snake case (InvoiceStatus -> raw_invoice_status)."""
    return "raw_" + snake(topic)


def pending_report_name(model: str) -> str:
    """The view beside an output model that lists what waits and why: new_invoices -> new_invoices__pending."""
    return f"{model}__pending"


def qualified(target: Target, name: str) -> str:
    """`db`.`table` for a table name, in the target's schema unless it names one."""
    if not _NAME.match(name):
        raise ZyncError(f"{name!r} is not a table name (letters, digits and _, optionally database.table)")
    db, _, table = name.rpartition(".")
    return f"`{db or target.schema}`.`{table}`"


def dead_letter_table_name(raw_table: str) -> str:
    """The dead-letter table beside a raw table (errors.tolerance: all): raw_invoices -> raw_invoices__dead_letters."""
    return raw_table + DEAD_LETTERS_SUFFIX


def kafka_struct() -> T.StructType:
    """The `kafka` column ingest writes: a record's coordinates, its timestamp and its writer schema ids."""
    return T.StructType([
        T.StructField("topic", T.StringType(), False),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("offset", T.LongType(), False),
        T.StructField("timestamp", T.TimestampType(), True),
        T.StructField("key_schema_id", T.IntegerType(), True),
        T.StructField("value_schema_id", T.IntegerType(), True),
    ])


def raw_row_schema(key: T.DataType, value: T.DataType) -> T.StructType:
    """A raw table's columns: the envelope first (so Delta keeps statistics on it), then key and value."""
    return T.StructType([T.StructField("kafka", kafka_struct(), False),
                         T.StructField("key", key, True), T.StructField("value", value, True)])


def check_envelope(schema: T.StructType, table: str, kind: str = "raw") -> None:
    """Refuse a table whose rows are not keyed by Kafka coordinates (zync refuses such a pool).

    kind "raw" (ingest writes it): `kafka` must be the first column; "output" (egress reads it,
    dbt wrote it): anywhere. Both need `kafka` struct<topic, partition, offset, ...>, `key` and `value`.
    """
    fields = {f.name: f for f in schema.fields}
    kafka = schema.fields[0] if kind == "raw" and schema.fields else fields.get("kafka")
    names = (set(kafka.dataType.names) if kafka is not None and kafka.name == "kafka"
             and isinstance(kafka.dataType, T.StructType) else set())
    missing = [f for f in ENVELOPE_FIELDS if f not in names] + [c for c in ("key", "value") if c not in fields]
    if not missing:
        return
    if kind == "raw":
        raise ZyncError(
            f"table {table} is not a zync raw table: it needs a first column `kafka` struct<topic, partition, "
            f"offset, ...> and columns `key` and `value` (missing: {', '.join(missing)}). "
            "Ingest into a new table (--table NAME), or drop this one."
        )
    raise ZyncError(
        f"table {table} is not a zync output table: it needs a column `kafka` struct<topic, partition, "
        f"offset, ...> and columns `key` and `value` (missing: {', '.join(missing)}). Publish a table a zync "
        "model wrote (models/outputs/), or give --table another name."
    )
