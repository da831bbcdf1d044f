"""Output tables in the CONTRACT.md shape, written directly with Spark, and topic readers."""

from __future__ import annotations

from typing import Any

from zync import topics

OUT_COLUMNS = ("kafka struct<topic:string,partition:int,offset:bigint>, kind string, key {key}, value {value}, "
               "fields array<string>, status string, run_id string")


def write_output_table(spark, table: str, key_type: str, value_type: str, rows: list[tuple], run_id: str = "r1") -> None:
    """Append rows to zync.<table>: (kind, topic, offset, key, value, fields) tuples, Delta, one commit."""
    schema = OUT_COLUMNS.format(key=key_type, value=value_type)
    data = [((topic, 0, offset), kind, key, value, fields, "processed" if kind == "done" else None, run_id)
            for kind, topic, offset, key, value, fields in rows]
    spark.sql("create database if not exists zync")
    spark.createDataFrame(data, schema).write.format("delta").mode("append").saveAsTable(f"zync.{table}")


def out_rows(topic: str, start: int, values: list[tuple[Any, Any, list[str] | None]]) -> list[tuple]:
    """Out rows with contiguous offsets from start: (key, value, fields) each."""
    return [("out", topic, start + i, key, value, fields) for i, (key, value, fields) in enumerate(values)]


def published(target, topic: str) -> list[dict]:
    return list(topics.consume(target, topic, from_beginning=True, exit_after=0.0))
