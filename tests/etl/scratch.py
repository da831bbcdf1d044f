"""Raw tables for ETL tests, written directly by Spark (the scratch projects: testkit/scratch.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlparse

from compiler.schemas import SchemaSource, delta_table_schemas
from testkit.scratch import SCHEMA

# Raw tables in the shape `zync from-kafka` writes, with a small Debezium-like value.
RAW_DDL = (
    "kafka struct<topic: string, partition: int, offset: bigint, timestamp: timestamp>, "
    "key struct<id: bigint>, "
    "value struct<op: string, after: struct<id: bigint, ref: bigint, name: string>>"
)
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def warehouse_schemas(spark) -> SchemaSource:
    """The raw tables' schemas as `zync etl compile` reads them: from their Delta logs in the warehouse."""
    warehouse = Path(urlparse(spark.conf.get("spark.sql.warehouse.dir")).path)
    return delta_table_schemas(warehouse, SCHEMA)


def drop_tables(spark, *relations: str) -> None:
    """Drop tables and views by name (a model's `__pending` companion is a view)."""
    for name in relations:
        if not spark.catalog.tableExists(f"{SCHEMA}.{name}"):
            continue
        kind = "view" if spark.catalog.getTable(f"{SCHEMA}.{name}").tableType == "VIEW" else "table"
        spark.sql(f"drop {kind} if exists {SCHEMA}.{name}")


def raw_row(topic: str, offset: int, key: int | None, op: str | None, id: int | None = None,
            ref: int | None = None, name: str | None = None, partition: int = 0, seconds: int | None = None):
    """One raw record; op None is a tombstone. seconds: Kafka timestamp after EPOCH (default: offset)."""
    stamp = EPOCH + timedelta(seconds=offset if seconds is None else seconds)
    value = None if op is None else (op, (id if id is not None else key, ref, name))
    return ((topic, partition, offset, stamp), None if key is None else (key,), value)


def append_raw(spark, table: str, rows: list, files: int = 1, ddl: str = RAW_DDL) -> None:
    """Append rows to a raw table in one commit (creating it), as `files` files split by offset."""
    # Run alone, these tests may be the first to use the schema (from-kafka creates it too).
    spark.sql(f"create database if not exists {SCHEMA}")
    frame = spark.createDataFrame(rows, ddl)
    if files > 1:
        frame = frame.repartitionByRange(files, "kafka.offset")
    else:
        frame = frame.coalesce(1)
    frame.write.format("delta").mode("append").saveAsTable(f"{SCHEMA}.{table}")
