"""Mirrors keep every value as the source has it: NULL structs stay NULL through a MERGE, and
Debezium's placeholder for an unchanged TOASTed value never replaces the value it stands for.

One scenario for the module (a build, then an incremental run), on real Spark/Delta and dbt,
with raw rows in the shape `zync from-kafka` writes for a PostgreSQL table.
"""

from __future__ import annotations

import datetime

import pytest
from pyspark.sql import types as T

from tests.mirrors.conftest import drop_tables, mirror_project, rows
from zync.envelope import raw_row_schema as row_schema

TOPIC = "mir_Values"
RAW = "mir_raw_values"
MIRROR = "mir_values"
PLACEHOLDER = "__debezium_unavailable_value"
MIRRORS = f"""\
mirrors:
  - model: {MIRROR}
    topic: {TOPIC}
    table: {RAW}
"""


def raw_schema() -> T.StructType:
    after = T.StructType([
        T.StructField("ID", T.IntegerType()),
        T.StructField("note", T.StringType()),
        # Debezium's VariableScaleDecimal, for an unconstrained PostgreSQL numeric
        T.StructField("amount", T.StructType([T.StructField("scale", T.IntegerType(), False),
                                              T.StructField("value", T.BinaryType(), False)])),
        T.StructField("tags", T.ArrayType(T.StringType())),
        T.StructField("blob", T.BinaryType()),
    ])
    return row_schema(T.StructType([T.StructField("ID", T.IntegerType())]), T.StructType([
        T.StructField("before", after), T.StructField("after", after),
        T.StructField("op", T.StringType()), T.StructField("ts_ms", T.LongType()),
    ]))


def change(offset: int, op: str, key: int, note=None, amount=None, tags=None, blob=None):
    kafka = (TOPIC, 0, offset, datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=offset), None, None)
    after = None if op == "d" else (key, note, amount, tags, blob)
    return (kafka, (key,), (None, after, op, offset))


LONG = "x" * 9000  # TOASTed in PostgreSQL
BATCH_1 = [
    change(0, "r", 1, note=LONG, amount=None, tags=["a", "b"], blob=b"\x00\x01"),
    change(1, "r", 2, note="two", amount=(2, b"\x04\xd2"), tags=None, blob=None),
]
BATCH_2 = [
    # an update that leaves the TOASTed columns alone, and a NULL struct before and after
    change(2, "u", 1, note=PLACEHOLDER, amount=None, tags=[PLACEHOLDER], blob=PLACEHOLDER.encode()),
    # a struct set to NULL
    change(3, "u", 2, note="two-b", amount=None, tags=None, blob=None),
    # insert then an update leaving the text alone, in one run: the insert's text
    change(4, "c", 3, note="three", amount=(0, b"\x07"), tags=["c"], blob=b"\x03"),
    change(5, "u", 3, note=PLACEHOLDER, amount=(0, b"\x08"), tags=[PLACEHOLDER], blob=PLACEHOLDER.encode()),
    # a first sight of a key whose text is unavailable: nothing to keep, so NULL
    change(6, "u", 4, note=PLACEHOLDER, amount=None, tags=None, blob=None),
]
VALUES = ("select ID, note = '{long}' as long_note, case when note = '{long}' then null else note end as note, "
          "amount is null, amount.scale, hex(amount.value), tags, hex(blob) from zync.{table} order by ID")
EXPECTED = [
    (1, True, None, True, None, None, ["a", "b"], "0001"),
    (2, False, "two-b", True, None, None, None, None),
    (3, False, "three", False, 0, "08", ["c"], "03"),
    (4, None, None, True, None, None, None, None),
]


def append(spark, batch):
    spark.createDataFrame(batch, raw_schema()).write.format("delta").mode("append").saveAsTable(f"zync.{RAW}")


def values(spark, table: str = MIRROR) -> list[tuple]:
    return [tuple(list(v) if isinstance(v, list) else v for v in r)
            for r in rows(spark, VALUES.format(long=LONG, table=table))]


@pytest.fixture(scope="module")
def scenario(spark, tmp_path_factory):
    drop_tables(spark, RAW, MIRROR)
    project = mirror_project(tmp_path_factory.mktemp("mir_values") / "project", {"mirrors.yml": MIRRORS}, spark)
    append(spark, BATCH_1)
    project.dbt("run", "--select", MIRROR)
    append(spark, BATCH_2)
    unfolded = values(spark)  # batch 2 ingested, not folded: the mirror's view applies it
    project.dbt("run", "--select", MIRROR)
    incremental = values(spark)
    yield project, incremental, unfolded
    drop_tables(spark, RAW, MIRROR)


def test_an_incremental_run_keeps_null_structs_null_and_unchanged_toasted_values(scenario):
    _, incremental, _ = scenario
    assert incremental == EXPECTED


def test_the_view_shows_unfolded_changes_with_the_same_values(scenario):
    _, _, unfolded = scenario
    assert unfolded == EXPECTED


def test_a_rebuild_gives_the_same_values(spark, scenario):
    project, incremental, _ = scenario
    project.dbt("run", "--select", MIRROR, "--full-refresh")
    assert values(spark) == incremental
    # ...and the data test that compares them value by value passes on both
    project.dbt("test", "--select", MIRROR)


def test_the_data_test_compares_values_not_only_keys(spark, scenario):
    project, _, _ = scenario
    # ID 1's amount is NULL at the source; the keys all still match
    spark.sql(f"update zync.{MIRROR}__base set amount = named_struct('scale', 0, 'value', X'00') where ID = 1")
    result = project.dbt("test", "--select", MIRROR, expect_success=False)
    failed = sorted(r.node.name.split(f"_{MIRROR}")[0] for r in result.results if r.status == "fail")
    assert failed == ["zync_mirror_matches_raw"]
