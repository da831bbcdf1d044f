"""Scratch dbt projects for mirror tests, and raw tables written straight with Spark.

Test mirrors never touch the project's committed models: each test compiles
its own `mirrors:` file into a project under tmp_path (the real
dbt_project.yml, macros/ and seeds/ linked in, the real profiles/) and runs
dbt there in-process, on the session's SparkSession.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from compiler import compile_transforms, write_outputs

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "zync"


@dataclass
class ScratchProject:
    path: Path

    def run(self, *args: str, expect_success: bool = True):
        from dbt.cli.main import dbtRunner

        os.chdir(self.path)
        result = dbtRunner().invoke(
            [*args, "--project-dir", str(self.path), "--profiles-dir", str(ROOT / "profiles")]
        )
        if expect_success and not result.success:
            details = result.exception or [
                f"{r.node.name}: {r.status}: {r.message}" for r in getattr(result.result, "results", []) if r.status not in ("success", "pass")
            ]
            raise AssertionError(f"dbt {' '.join(args)} failed: {details}")
        return result


def scratch_project(base: Path, mirrors_yaml: str) -> ScratchProject:
    """A dbt project under base whose only models are the mirrors of mirrors_yaml, compiled now."""
    project = base / "project"
    if project.exists():
        shutil.rmtree(project)
    (project / "transforms").mkdir(parents=True)
    shutil.copy(ROOT / "dbt_project.yml", project / "dbt_project.yml")
    for folder in ("macros", "seeds"):
        (project / folder).symlink_to(ROOT / folder)
    source = project / "transforms" / "mirrors.yml"
    source.write_text(mirrors_yaml)
    write_outputs(compile_transforms([source], project), project)
    return ScratchProject(project)


@pytest.fixture(autouse=True)
def _back_to_the_project_root():
    # dbt runs chdir into the scratch project; later tests expect the project root.
    yield
    os.chdir(ROOT)


def raw_schema(extra_after_fields: tuple[str, ...] = ()):
    """The raw-table shape `zync from-kafka` writes for a Debezium topic keyed by {ID: int}."""
    from pyspark.sql.types import (
        IntegerType, LongType, StringType, StructField, StructType, TimestampType,
    )

    after = StructType(
        [StructField("ID", IntegerType()), StructField("name", StringType())]
        + [StructField(f, StringType()) for f in extra_after_fields]
    )
    return StructType([
        StructField("kafka", StructType([
            StructField("topic", StringType(), False),
            StructField("partition", IntegerType(), False),
            StructField("offset", LongType(), False),
            StructField("timestamp", TimestampType()),
        ]), False),
        StructField("key", StructType([StructField("ID", IntegerType())])),
        StructField("value", StructType([
            StructField("before", after),
            StructField("after", after),
            StructField("op", StringType()),
            StructField("ts_ms", LongType()),
        ])),
    ])


def change(topic: str, offset: int, op: str | None, key: int, name: str | None = None, ts: int | None = None,
           partition: int = 0, **extra: str):
    """One raw row: op None is a Kafka tombstone; ts defaults to the offset (source time in ms)."""
    import datetime

    ts = offset if ts is None else ts
    kafka = (topic, partition, offset, datetime.datetime(2026, 1, 1) + datetime.timedelta(milliseconds=offset))
    if op is None:
        return (kafka, (key,), None)
    after = None if op == "d" else (key, name, *extra.values())
    before = (key, None, *[None] * len(extra)) if op in ("u", "d") else None
    return (kafka, (key,), (before, after, op, ts))


def append_raw(spark, table: str, rows: list, extra_after_fields: tuple[str, ...] = ()) -> None:
    """Append rows as one Delta commit, as one ingest batch would (new after fields merge into the schema).

    Row images shorter than the schema's (ID, name, *extra_after_fields) are padded with nulls.
    """
    width = 2 + len(extra_after_fields)

    def pad(image):
        return None if image is None else (*image, *[None] * (width - len(image)))

    padded = [r if r[2] is None else (r[0], r[1], (pad(r[2][0]), pad(r[2][1]), *r[2][2:])) for r in rows]
    frame = spark.createDataFrame(padded, raw_schema(extra_after_fields))
    frame.write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable(f"{SCHEMA}.{table}")


def drop_tables(spark, *tables: str) -> None:
    spark.sql(f"create schema if not exists {SCHEMA}")
    for table in tables:
        spark.sql(f"drop table if exists {SCHEMA}.{table}")


def rows(spark, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]
