"""Raw tables for mirror tests, written straight with Spark.

Test mirrors never touch the project's committed models: each test compiles
its own `mirrors:` file into a scratch project (testkit/scratch.py).

Their dbt commands run interpreted with adaptive execution off (service/engine_settings.py:
small_run_engine, as tests/etl's and tests/dbt_native's do): what a mirror
holds does not depend on the plan, and code generation costs these small runs
more than their rows do. The compiled plan of a mirror's run stays covered by
tests/debezium (a hand-run `dbt run`, the session's settings) and by
tests/service/test_run_once.py and tests/cluster (`zync run`'s dbt stage on
the invoices demo's mirror, its rows checked).
"""

from __future__ import annotations

import datetime

from pyspark.sql import types as T

from service.engine_settings import small_run_engine
from testkit.scratch import ScratchProject, drop_relation, make_scratch_project
from zync.envelope import raw_row_schema as row_schema

SCHEMA = "zync"


def mirror_project(folder, transforms: dict[str, str], spark) -> ScratchProject:
    """make_scratch_project's project, its dbt commands run interpreted, adaptive execution off (see above)."""
    return make_scratch_project(folder, transforms, spark=spark, engine=small_run_engine)


def raw_schema(extra_after_fields: tuple[str, ...] = ()) -> T.StructType:
    """The raw table `zync from-kafka` writes for a Debezium topic keyed by {ID: int} (its envelope: zync.envelope)."""
    after = T.StructType(
        [T.StructField("ID", T.IntegerType()), T.StructField("name", T.StringType())]
        + [T.StructField(f, T.StringType()) for f in extra_after_fields]
    )
    return row_schema(
        T.StructType([T.StructField("ID", T.IntegerType())]),
        T.StructType([
            T.StructField("before", after),
            T.StructField("after", after),
            T.StructField("op", T.StringType()),
            T.StructField("ts_ms", T.LongType()),
        ]),
    )


def change(topic: str, offset: int, op: str | None, key: int, name: str | None = None, ts: int | None = None,
           partition: int = 0, **extra: str):
    """One raw row: op None is a Kafka tombstone; ts defaults to the offset (source time in ms)."""
    ts = offset if ts is None else ts
    stamp = datetime.datetime(2026, 1, 1) + datetime.timedelta(milliseconds=offset)
    kafka = (topic, partition, offset, stamp, None, None)  # no schema ids: written by the test, not from Kafka
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
        drop_relation(spark, f"{SCHEMA}.{table}")


def rows(spark, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]
