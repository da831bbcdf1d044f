"""`--shaper F.sql`: a Spark SQL SELECT over the view `batch`, applied before encoding."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from zync.errors import ZyncError

REQUIRED = ("kafka", "key", "value")


def check_select(sql: str, where: str) -> None:
    """One SELECT statement, nothing else (a shaper reshapes; it never writes)."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.ParseError as e:
        raise ZyncError(f"{where}: not Spark SQL: {e}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise ZyncError(f"{where}: a shaper is one SELECT over the view `batch` (found "
                        f"{len(statements)} statements, first {type(statements[0]).__name__ if statements else 'none'})")


def apply_shaper(spark, rows, sql: str, where: str | None):
    """The shaper's result over `rows`; it must keep the kafka, key and value columns."""
    where = where or "shaper"
    check_select(sql, where)
    rows.createOrReplaceTempView("batch")
    try:
        shaped = spark.sql(sql)
    except Exception as e:  # noqa: BLE001 - Spark's analysis errors come in many classes
        raise ZyncError(f"{where}: Spark cannot run it over `batch`: {str(e).splitlines()[0]}") from None
    missing = [c for c in REQUIRED if c not in shaped.columns]
    if missing:
        raise ZyncError(f"{where}: its result lacks column(s) {missing}; a shaper keeps kafka, key and value "
                        f"(and `fields` for partial rows); it returned {shaped.columns}")
    kafka_fields = {f.name: f.dataType.simpleString() for f in shaped.schema["kafka"].dataType.fields} \
        if hasattr(shaped.schema["kafka"].dataType, "fields") else {}
    if kafka_fields.get("offset") != "bigint" or kafka_fields.get("topic") != "string":
        raise ZyncError(f"{where}: it changed the kafka column ({shaped.schema['kafka'].dataType.simpleString()}); "
                        "a shaper must keep kafka.topic and kafka.offset as they are")
    return shaped
