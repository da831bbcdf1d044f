"""A field some records were written without reads as its schema's default, in mirrors and in what
transforms see, while the raw table keeps the null it holds (Avro's schema resolution; PostgreSQL's
`ALTER TABLE ... ADD COLUMN ... DEFAULT` gives its older rows the default too).

The raw table is what `zync from-kafka` writes, with the table property it keeps beside it
(`zync.fieldDefaults`: which writer schema ids lack which defaulted field; tests/unit checks how
defaults are read from schemas, tests/debezium the whole path on the real connector).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from tests.mirrors.conftest import drop_tables, mirror_project, rows

TOPIC = "mir_Defaults"
RAW = "mir_raw_defaults"
MIRROR = "mir_defaults"
OUT = "mir_defaults_out"
OLD, NEW = 2, 5  # writer schema ids: OLD has no qty, status or due; NEW has all three
DEFAULTS = {
    "value.after.qty": {"default": 0, "absentIn": [OLD]},
    "value.after.status": {"default": "it's new", "absentIn": [OLD]},
    "value.after.due": {"default": 3, "absentIn": [OLD]},  # io.debezium.time.Date: days since the epoch
    "value.after.flag": {"default": True, "absentIn": [OLD]},
}
CONNECT_NAMES = {"value.after.due": "io.debezium.time.Date"}
PROJECT = f"""\
mirrors:
  - model: {MIRROR}
    topic: {TOPIC}
    table: {RAW}
"""
TRANSFORM = f"""\
inputs:
  - {{topic: {TOPIC}, table: {RAW}}}
output: {{topic: MirDefaultsOut, model: {OUT}}}
transforms:
  - type: stateless
    where: value.op IN ('c', 'u', 'r')
    in: {TOPIC}
    out: MirDefaultsOut
    key: in.key
    value:
      ID: in.value.after.ID
      qty: in.value.after.qty
      status: in.value.after.status
      due: in.value.after.due
      flag: in.value.after.flag
"""
AFTER_DDL = "struct<ID: int, qty: int, status: string, due: int, flag: boolean>"
RAW_DDL = ("kafka struct<topic: string, partition: int, offset: bigint, timestamp: timestamp, key_schema_id: int, "
           f"value_schema_id: int>, key struct<ID: int>, value struct<before: {AFTER_DDL}, after: {AFTER_DDL}, "
           "op: string, ts_ms: bigint>")
AT = dt.datetime(2026, 11, 24, 12, 0, 0)


def raw_rows():
    def row(offset, schema_id, key, after, op="c"):
        return ((TOPIC, 0, offset, AT, 1, schema_id), (key,), (None, after, op, 1000 + offset))

    return [
        row(0, OLD, 1, (1, None, None, None, None), op="r"),   # written before the fields existed
        row(1, OLD, 2, (2, None, None, None, None), op="r"),
        row(2, NEW, 3, (3, 7, "open", 10, False)),
        row(3, NEW, 4, (4, 0, None, None, None)),              # status, due, flag written as null
        row(4, OLD, 2, None, op="d"),                          # a delete: no after to default
    ]


def set_properties(spark, properties: dict) -> None:
    assignments = ", ".join(f"'{k}' = '{json.dumps(v).replace(chr(39), chr(92) + chr(39))}'" for k, v in properties.items())
    spark.sql(f"alter table zync.{RAW} set tblproperties ({assignments})")


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    drop_tables(spark, RAW, MIRROR, OUT)
    spark.createDataFrame(raw_rows(), RAW_DDL).write.format("delta").saveAsTable(f"zync.{RAW}")
    set_properties(spark, {"zync.fieldDefaults": DEFAULTS, "zync.connectNames": CONNECT_NAMES})
    project = mirror_project(tmp_path_factory.mktemp("mir_defaults") / "project", {"mirrors.yml": PROJECT}, spark)
    (project.path / "transforms" / "out.yml").write_text(TRANSFORM)
    from compiler import compile_transforms, write_outputs

    write_outputs(compile_transforms(sorted((project.path / "transforms").glob("*.yml")), project.path), project.path)
    project.dbt("run")
    yield project
    drop_tables(spark, RAW, MIRROR, OUT)


EPOCH = dt.date(1970, 1, 1)
EXPECTED = [  # (ID, qty, status, due, flag)
    (1, 0, "it's new", EPOCH + dt.timedelta(days=3), True),
    (3, 7, "open", EPOCH + dt.timedelta(days=10), False),
    (4, 0, None, None, None),
]


def test_the_raw_table_keeps_the_nulls(spark, built):
    assert rows(spark, f"select value.after.qty, value.after.status from zync.{RAW} where key.ID = 1") == [(None, None)]


def test_a_mirror_reads_missing_fields_as_their_defaults(spark, built):
    assert rows(spark, f"select ID, qty, status, due, flag from zync.{MIRROR} order by ID") == EXPECTED
    built.dbt("test")  # the incremental mirror equals a rebuild


def test_transforms_see_the_defaults(spark, built):
    out = spark.table(f"zync.{OUT}").where("kind = 'out'").collect()
    got = sorted((r.value.ID, r.value.qty, r.value.status, r.value.due, r.value.flag) for r in out)
    assert got == sorted(EXPECTED + [(2, 0, "it's new", EPOCH + dt.timedelta(days=3), True)])


def test_a_mirror_that_gains_a_defaulted_column_fills_in_the_rows_it_holds(spark, built):
    """The mirror was built before `extra` existed; records of the new writer bring it in."""
    after = "struct<ID: int, qty: int, status: string, due: int, flag: boolean, extra: string>"
    schema = RAW_DDL.replace(AFTER_DDL, after)
    spark.createDataFrame([((TOPIC, 0, 5, AT, 1, 6), (5,), (None, (5, 1, "s", 1, True, "x"), "c", 1005))],
                          schema).write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable(f"zync.{RAW}")
    defaults = {**DEFAULTS, "value.after.extra": {"default": "none yet", "absentIn": [OLD, NEW]}}
    set_properties(spark, {"zync.fieldDefaults": defaults})
    built.dbt("run", "--select", MIRROR)
    assert rows(spark, f"select ID, extra from zync.{MIRROR} order by ID") == [
        (1, "none yet"), (3, "none yet"), (4, "none yet"), (5, "x")]
    built.dbt("test", "--select", MIRROR)
