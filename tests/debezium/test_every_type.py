"""Outputs and mirrors over a real Debezium table of every column type PostgreSQL's connector emits.

A table of 33 columns (integers, floats, numeric with and without a scale, money, text types,
bytea, dates and times with and without zones, interval, uuid, json, jsonb, xml, network types,
bits, arrays, an enum, a range, a point) and a small table of labels, captured by the real
connector. An output that denormalises the two and carries every column of the wide one must
plan and run (Spark's analyzer gives up on a plan that needs too many passes), typed; then one
row gets an unconstrained numeric wider than decimal(38, 18): an output whose rules do not read
that column must keep flowing, one that does must stop with a message naming the field, and a
mirror must either stop likewise or, with `types: {c_numeric_free: string}`, hold every value's
exact digits.
"""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

import pytest

from testkit.scratch import make_scratch_project

DB = "dbz_types"
PREFIX = "dbzt"
CONNECTOR = "dbz-types-source"
WIDE = f"{PREFIX}.public.every_type"
LABELS = f"{PREFIX}.public.labels"
RAW_WIDE = "dbzt_raw_every_type"
RAW_LABELS = "dbzt_raw_labels"
HUGE = "123456789012345678901234567890.123456789"  # 39 digits: legal in PostgreSQL, too wide for Spark's decimal

SCHEMA = """
create type mood as enum ('sad', 'ok', 'happy');
create table every_type (
    id integer primary key,
    c_smallint smallint, c_bigint bigint, c_real real, c_double double precision,
    c_numeric numeric(12, 3), c_numeric_free numeric, c_money money,
    c_bool boolean, c_char char(3), c_varchar varchar(20), c_text text, c_bytea bytea,
    c_date date, c_time time, c_timetz timetz, c_timestamp timestamp, c_timestamptz timestamptz,
    c_interval interval, c_uuid uuid, c_json json, c_jsonb jsonb, c_xml xml,
    c_inet inet, c_cidr cidr, c_macaddr macaddr, c_bit bit(1), c_varbit bit varying(8),
    c_int_array integer[], c_text_array text[], c_mood mood, c_range int4range, c_point point
);
create table labels (id integer primary key, type_id integer not null, label text not null);
"""


def rows(first: int, last: int) -> str:
    return f"""
insert into every_type
select i, i, i * 1000000000::bigint, i / 4.0, i / 3.0, i * 1.125, i / 8.0, i * 2.5,
       i % 2 = 0, 'c' || i % 10, 'varchar ' || i, 'text ' || i, decode(lpad(to_hex(i), 4, '0'), 'hex'),
       date '2024-01-01' + i, time '08:00:00.25' + i * interval '1 minute', timetz '08:00:00+02', timestamp '2024-03-10 08:30:00.5' + i * interval '1 day',
       timestamptz '2024-03-10 12:00:00+00' + i * interval '1 hour', i * interval '1 day 2 hours', ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid,
       json_build_object('n', i), jsonb_build_object('n', i), xmlparse(content '<n>' || i || '</n>'),
       ('10.0.0.' || i)::inet, '10.0.0.0/8', '08:00:2b:01:02:03', (i % 2)::bit(1), '1010'::varbit,
       array[i, i + 1], array['a' || i], (array['sad', 'ok', 'happy'])[1 + i % 3]::mood, int4range(i, i + 10), point(i, -i)
from generate_series({first}, {last}) i;
insert into labels select i, i, 'label ' || i from generate_series({first}, {last}) i;
"""


SNAPSHOT = 6
# after the snapshot: 2 + 2 inserts, 2 updates (to NULL and back), a delete and its tombstone
STREAM = [rows(7, 8),
          "update every_type set c_numeric_free = null, c_date = null where id = 3",
          "update every_type set c_numeric_free = -0.005, c_date = date '1999-12-31' where id = 3",
          "delete from every_type where id = 2"]
STREAMED_WIDE = 2 + 2 + 2
STREAMED_LABELS = 2

OUT_ALL = "dbzt_every_type_out"
OUT_SOME = "dbzt_labels_out"


def denorm(model: str, topic: str, value: str) -> str:
    """The invoices demo's shape over these tables: a wide row with its label, deletes as tombstones."""
    return f"""\
inputs:
  - {{topic: {WIDE}, table: {RAW_WIDE}}}
  - {{topic: {LABELS}, table: {RAW_LABELS}}}
output: {{topic: {topic}, model: {model}}}
transforms:
  - type: denorm
    where: value.op IN ('c', 'r')
    left: {WIDE}
    right: {LABELS}
    join-on: left.value.after.id = right.value.after.type_id
    out: {topic}
    key: left.key
    value:
{value}
  - type: stateless
    where: value.op = 'u'
    in: {WIDE}
    out: {topic}
    key: in.key
    value: {{id: in.value.after.id, c_text: in.value.after.c_text}}
  - type: stateless
    where: value.op = 'd'
    in: {WIDE}
    out: {topic}
    key: in.key
    value: null
"""


# every column of the wide row, typed, and the label
READS_ALL = "      row: left.value.after\n      label: right.value.after.label\n"
# the demo's few columns: no rule reads c_numeric_free
READS_SOME = "      id: left.value.after.id\n      c_text: left.value.after.c_text\n      label: right.value.after.label\n"


@pytest.fixture(scope="module")
def streamed(debezium, spark):
    for table in (RAW_WIDE, RAW_LABELS, OUT_ALL, OUT_SOME):
        spark.sql(f"drop table if exists zync.{table}")
    debezium.database(DB)
    debezium.psql(SCHEMA + rows(1, SNAPSHOT), DB)
    debezium.source(CONNECTOR, DB, ["public.every_type", "public.labels"], PREFIX)
    debezium.wait_records(WIDE, SNAPSHOT)
    for statement in STREAM:
        debezium.psql(statement, DB)
    counts = {WIDE: debezium.wait_records(WIDE, SNAPSHOT + STREAMED_WIDE),
              LABELS: debezium.wait_records(LABELS, SNAPSHOT + STREAMED_LABELS)}
    for topic, table in ((WIDE, RAW_WIDE), (LABELS, RAW_LABELS)):
        assert debezium.ingest(topic, table, counts[topic]) == counts[topic]
    yield counts
    debezium.delete(CONNECTOR)


@pytest.fixture(scope="module")
def everything(streamed, tmp_path_factory):
    """The output carrying every column, built once: the first test checks its run, the second its stop."""
    project = make_scratch_project(tmp_path_factory.mktemp("dbzt") / "all",
                                   {"wide.yml": denorm(OUT_ALL, "dbzt.EveryType", READS_ALL)})
    started = time.monotonic()
    project.dbt("run", "--select", OUT_ALL)
    print(f"\n{OUT_ALL}: first dbt run (plan and run) {time.monotonic() - started:.1f}s")
    return project


def out_rows(spark, model: str) -> list:
    return spark.sql(f"select key.id as id, value, fields from zync.{model} where kind = 'out' "
                     "order by kafka.offset").collect()


def test_the_table_has_every_type_and_its_values_arrive(streamed, spark):
    columns = spark.sql(f"select value.after.* from zync.{RAW_WIDE} limit 0").columns
    assert len(columns) == 33
    # the unconstrained numeric arrives as Debezium's VariableScaleDecimal, not as a Spark decimal
    assert spark.sql(f"select value.after.c_numeric_free.scale from zync.{RAW_WIDE} limit 1").count() == 1


def test_an_output_carrying_every_column_plans_and_runs_typed(everything, debezium, spark):
    pairs = {r["id"]: r["value"]["row"] for r in out_rows(spark, OUT_ALL) if r["fields"] == ["row", "label"]}
    expected = {r["id"]: r for r in debezium.query(
        "select id, c_numeric_free, c_date, c_text, c_bigint from every_type", DB)}
    # every row created (2 deleted after its pair, 3 updated after it: their pairs show the created row)
    assert sorted(pairs) == list(range(1, 9))
    for ident in (1, 4, 5, 6, 7, 8):
        row, pg = pairs[ident], expected[ident]
        assert row["c_numeric_free"] == Decimal(pg["c_numeric_free"])  # a VariableScaleDecimal, typed
        assert row["c_date"] == dt.date.fromisoformat(pg["c_date"])
        assert (row["c_text"], row["c_bigint"]) == (pg["c_text"], pg["c_bigint"])
    assert [r["id"] for r in out_rows(spark, OUT_ALL) if r["value"] is None] == [2]


def test_a_value_no_spark_decimal_holds_stops_only_what_reads_it(streamed, everything, debezium, spark, tmp_path):
    some = make_scratch_project(tmp_path / "some", {"labels.yml": denorm(OUT_SOME, "dbzt.Labels", READS_SOME)})
    some.dbt("run", "--select", OUT_SOME)

    debezium.psql(rows(9, 9) + f"update every_type set c_numeric_free = {HUGE}, c_text = 'huge' where id = 9", DB)
    total = debezium.wait_records(WIDE, streamed[WIDE] + 2)
    assert debezium.ingest(WIDE, RAW_WIDE, total - streamed[WIDE]) == total - streamed[WIDE]
    debezium.wait_records(LABELS, streamed[LABELS] + 1)
    assert debezium.ingest(LABELS, RAW_LABELS, 1) == 1

    # the output whose rules do not read the column: row 9 paired, then its update, as usual
    some.dbt("run", "--select", OUT_SOME)
    assert [(r["id"], r["value"]["c_text"]) for r in out_rows(spark, OUT_SOME) if r["value"]][-2:] == [(9, "text 9"), (9, "huge")]

    # the output that carries it stops, saying which field and what to do; nothing of it is marked done
    done_before = spark.sql(f"select count(*) from zync.{OUT_ALL} where kind = 'done'").first()[0]
    failed = everything.dbt("run", "--select", OUT_ALL, expect_success=False)
    message = " ".join(r.message or "" for r in failed.results)
    assert not failed.success and "value.after.c_numeric_free" in message and HUGE in message
    assert "types: {c_numeric_free: string}" in message
    assert spark.sql(f"select count(*) from zync.{OUT_ALL} where kind = 'done'").first()[0] == done_before

    # a mirror: by default it stops likewise; with types: string it holds every value's exact digits
    mirror = "dbzt_every_type_mirror"
    spark.sql(f"drop table if exists zync.{mirror}")
    entry = f"mirrors:\n  - model: {mirror}\n    topic: {WIDE}\n    table: {RAW_WIDE}\n"
    plain = make_scratch_project(tmp_path / "mirror", {"mirrors.yml": entry})
    failed = plain.dbt("run", "--select", mirror, expect_success=False)
    assert not failed.success and "value.after.c_numeric_free" in " ".join(r.message or "" for r in failed.results)
    spark.sql(f"drop table if exists zync.{mirror}")  # a column's type changes: the mirror is built anew
    exact = make_scratch_project(tmp_path / "mirror", {"mirrors.yml": entry + "    types:\n      c_numeric_free: string\n"})
    exact.dbt("run", "--select", mirror)
    held = {r["id"]: r["c_numeric_free"] for r in spark.sql(f"select id, c_numeric_free from zync.{mirror}").collect()}
    # each value as PostgreSQL holds it, every digit (Debezium sends it without trailing zeros: 0.125
    # for PostgreSQL's 0.12500000000000000000, the same number)
    expected = {r["id"]: r["t"] for r in debezium.query("select id, c_numeric_free::text as t from every_type", DB)}
    assert {k: Decimal(v) for k, v in held.items()} == {k: Decimal(v) for k, v in expected.items()}
    assert held[9] == HUGE and held[3] == "-0.005"
    exact.dbt("test", "--select", mirror)
