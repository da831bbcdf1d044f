"""The Kafka envelope every zync table carries: its type, and the check that refuses a table without it.

The envelope is what exactly-once rests on: a raw table's resume point is its
largest `kafka.offset` per partition, an output table's out rows are aligned with
the output topic's offsets by it. So a table without it is refused, whoever reads it.
(Apart from zync/tables.py because it needs pyspark, which `zync etl compile` does not load.)
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from zync.errors import ZyncError

ENVELOPE_FIELDS = ("topic", "partition", "offset")


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


def kafka_column(**fields: Column) -> Column:
    """The `kafka` column from one column per field of kafka_struct, by the field's name.

    The names and their order are kafka_struct's, so both of ingest's readers (Spark's Kafka
    source and the Python consumer) write the envelope the raw table has; each column must
    already be of its field's type.
    """
    names = kafka_struct().names
    if sorted(fields) != sorted(names):
        raise ValueError(f"the kafka column needs exactly the fields {names}, not {list(fields)}")
    return F.struct(*(fields[name].alias(name) for name in names)).alias("kafka")


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
