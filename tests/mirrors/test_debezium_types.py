"""Debezium's semantic types land as the Spark types users query, in mirrors and in what transforms see,
while the raw table keeps what Debezium wrote.

The raw table here is what `zync from-kafka` writes for a PostgreSQL table through Debezium with default
settings (values as Debezium encodes them, the Connect schema names in the table's `zync.connectNames`
property; tests/ingest checks that ingest records them).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest

from tests.mirrors.conftest import drop_tables, mirror_project, rows

TOPIC = "mir_Types"
RAW = "mir_raw_types"
MIRROR = "mir_types"
OUT = "mir_types_out"
CONNECT_NAMES = {
    "value.after.due": "io.debezium.time.Date",
    "value.after.at": "io.debezium.time.MicroTimestamp",
    "value.after.at_ms": "io.debezium.time.Timestamp",
    "value.after.at_tz": "io.debezium.time.ZonedTimestamp",
    "value.after.starts": "io.debezium.time.MicroTime",
    "value.after.amount": "io.debezium.data.VariableScaleDecimal",
    "value.after.doc": "io.debezium.data.Json",
}
for field in [k.split(".")[-1] for k in list(CONNECT_NAMES)]:
    CONNECT_NAMES[f"value.before.{field}"] = CONNECT_NAMES[f"value.after.{field}"]
# Debezium's records carry a Connect name too, and ingest notes them like any field's.
CONNECT_NAMES |= {"value": "mir.public.types.Envelope", "value.after": "mir.public.types.Value",
                  "value.before": "mir.public.types.Value"}
PROJECT = f"""\
mirrors:
  - model: {MIRROR}
    topic: {TOPIC}
    table: {RAW}
"""
TRANSFORM = f"""\
inputs:
  - {{topic: {TOPIC}, table: {RAW}}}
output: {{topic: MirTypesOut, model: {OUT}}}
transforms:
  - type: stateless
    where: value.op IN ('c', 'u')
    in: {TOPIC}
    out: MirTypesOut
    key: in.key
    value:
      ID: in.value.after.ID
      due: in.value.after.due
      at_tz: in.value.after.at_tz
      amount: in.value.after.amount
      next_day: date_add(in.value.after.due, 1)
"""
AFTER_DDL = ("struct<ID: int, due: int, at: bigint, at_ms: bigint, at_tz: string, starts: bigint, "
             "amount: struct<scale: int, value: binary>, doc: string>")
RAW_DDL = (f"kafka struct<topic: string, partition: int, offset: bigint, timestamp: timestamp>, key struct<ID: int>, "
           f"value struct<before: {AFTER_DDL}, after: {AFTER_DDL}, op: string, ts_ms: bigint>")

DUE = dt.date(2026, 11, 23)
AT = dt.datetime(2026, 11, 23, 10, 15, 30, 123456)
MICROS = (AT - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def unscaled(value: int) -> bytes:
    return value.to_bytes((value.bit_length() + 8) // 8 or 1, "big", signed=True)


ROWS = [  # (ID, unscaled amount, scale)
    (1, 12345, 2),          # 123.45
    (2, -5, 1),             # -0.5
    (3, 10**30 + 7, 12),    # 1000000000000000000.000000000007: more digits than 18 after the point keep 18
]


def raw_rows():
    out = []
    for n, (key, amount, scale) in enumerate(ROWS):
        after = (key, (DUE - dt.date(1970, 1, 1)).days + key, MICROS + key, MICROS // 1000 + key,
                 f"2026-11-23T10:15:3{key}.5Z", (10 * 3600 + 15 * 60 + key) * 1_000_000 + 250,
                 (scale, unscaled(amount)), json.dumps({"k": key}))
        out.append(((TOPIC, 0, n, AT), (key,), (None, after, "c", 1000 + n)))
    # a NULL in every typed column
    out.append(((TOPIC, 0, 3, AT), (4,), (None, (4, None, None, None, None, None, None, None), "c", 1003)))
    return out


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    drop_tables(spark, RAW, MIRROR, OUT)
    spark.createDataFrame(raw_rows(), RAW_DDL).write.format("delta").saveAsTable(f"zync.{RAW}")
    spark.sql(f"alter table zync.{RAW} set tblproperties ('zync.connectNames' = '{json.dumps(CONNECT_NAMES)}')")
    project = mirror_project(tmp_path_factory.mktemp("mir_types") / "project", {"mirrors.yml": PROJECT}, spark)
    (project.path / "transforms" / "out.yml").write_text(TRANSFORM)
    from compiler import compile_transforms, write_outputs

    write_outputs(compile_transforms(sorted((project.path / "transforms").glob("*.yml")), project.path), project.path)
    project.dbt("run")
    yield project
    drop_tables(spark, RAW, MIRROR, OUT)


def test_the_raw_table_keeps_what_debezium_wrote(spark, built):
    assert dict(spark.table(f"zync.{RAW}").select("value.after.*").dtypes)["due"] == "int"


def test_a_mirror_has_dates_timestamps_times_and_decimals(spark, built):
    types = dict(spark.table(f"zync.{MIRROR}").dtypes)
    assert {c: types[c] for c in ("due", "at", "at_ms", "at_tz", "starts", "amount", "doc")} == {
        "due": "date", "at": "timestamp", "at_ms": "timestamp", "at_tz": "timestamp", "starts": "string",
        "amount": "decimal(38,18)", "doc": "string"}
    got = rows(spark, f"select ID, due, at, at_ms, at_tz, starts, amount from zync.{MIRROR} order by ID")
    assert got == [
        (1, DUE + dt.timedelta(days=1), AT + dt.timedelta(microseconds=1), AT.replace(microsecond=124000),
         dt.datetime(2026, 11, 23, 10, 15, 31, 500000), "10:15:01.000250", decimal.Decimal("123.45")),
        (2, DUE + dt.timedelta(days=2), AT + dt.timedelta(microseconds=2), AT.replace(microsecond=125000),
         dt.datetime(2026, 11, 23, 10, 15, 32, 500000), "10:15:02.000250", decimal.Decimal("-0.5")),
        (3, DUE + dt.timedelta(days=3), AT + dt.timedelta(microseconds=3), AT.replace(microsecond=126000),
         dt.datetime(2026, 11, 23, 10, 15, 33, 500000), "10:15:03.000250",
         decimal.Decimal("1000000000000000000.000000000007")),
        (4, None, None, None, None, None, None),
    ]


def test_transforms_see_the_typed_values(spark, built):
    out = {r.key.ID: r.value for r in spark.table(f"zync.{OUT}").where("kind = 'out'").collect()}
    assert out[1].due == DUE + dt.timedelta(days=1) and out[1].next_day == DUE + dt.timedelta(days=2)
    assert out[2].amount == decimal.Decimal("-0.5")
    assert out[3].at_tz == dt.datetime(2026, 11, 23, 10, 15, 33, 500000)
    assert out[4].due is None and out[4].amount is None


def show_decimal(project, unscaled_value: int, scale: int):
    """dbt show of zync_variable_scale_decimal over one VariableScaleDecimal literal."""
    literal = f"named_struct('scale', {scale}, 'value', X'{unscaled(unscaled_value).hex()}')"
    return project.dbt("show", "--inline", f"select {{{{ zync_variable_scale_decimal('v') }}}} as d from (select {literal} as v)",
                       expect_success=False)


def test_a_decimal_with_more_than_18_places_fails_rather_than_round(built):
    # PostgreSQL's 1 / 7.0: 20 places; a cast to decimal(38, 18) would round the last two away.
    lossy = show_decimal(built, 14285714285714285714, 20)
    assert not lossy.success
    message = str(lossy.exception or [r.message for r in lossy.results])
    assert "the VariableScaleDecimal 0.14285714285714285714 does not fit decimal(38, 18)" in message, message
    assert "decimal.handling.mode to string" in message
    # Past the 18th place only zeros (PostgreSQL's 1 / 8.0): nothing is lost, the value passes.
    exact = show_decimal(built, 12500000000000000000, 20)
    assert exact.success, exact.exception
    assert exact.results[0].agate_table.rows[0][0] == decimal.Decimal("0.125")
