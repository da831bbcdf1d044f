"""Lookups (a dbt seed joined through ref()) and a value written as one struct, through `dbt seed` / `dbt run`."""

from __future__ import annotations

import json

import pytest

from tests.etl.scratch import EPOCH, SCHEMA, append_raw, drop_tables, raw_row, warehouse_schemas

RAW = "lkp_orders"
RAW_STATUS = "lkp_status"
OUT = "lkp_out"
SEED = "lkp_customer_ids"
TOPIC = "lkpOrders"
STATUS = "lkpStatus"

TRANSFORM = f"""\
inputs:
  - {{topic: {TOPIC}, table: {RAW}}}
  - {{topic: {STATUS}, table: {RAW_STATUS}}}
lookups:
  - {{name: customers, ref: {SEED}}}
output: {{topic: lkpOut, model: {OUT}}}
transforms:
  - type: denorm
    where: value.op = 'c'
    left: {TOPIC}
    right: {STATUS}
    join-on: left.value.after.id = right.value.after.ref
    join:
      - {{lookup: customers, on: customers.name = left.value.after.name}}
    out: lkpOut
    key: left.key
    value: {{id: left.value.after.id, customer_id: customers.id, status: right.value.after.name}}
  - type: stateless
    where: value.op IN ('u', 'd')
    in: {TOPIC}
    out: lkpOut
    key: in.key
    value: in.value.after
  - type: stateless
    where: value.op = 'u' AND customers.id IS NOT NULL
    in: {STATUS}
    join:
      - {{lookup: customers, on: customers.name = in.value.after.name}}
    out: lkpOut
    key: in.key
    value: {{id: in.value.after.ref, customer_id: customers.id}}
"""


def deleted(offset: int, key: int):
    """A Debezium delete: op 'd', after null."""
    (kafka, key_struct, _) = raw_row(TOPIC, offset, key, "c")
    return (kafka, key_struct, ("d", None))


@pytest.fixture
def tables(spark):
    drop_tables(spark, RAW, RAW_STATUS, OUT, f"{OUT}__pending", SEED)
    yield
    drop_tables(spark, RAW, RAW_STATUS, OUT, f"{OUT}__pending", SEED)


def out_rows(etl) -> dict[int, tuple]:
    return {r.kafka.offset: (r.key.id, None if r.value is None else r.value.asDict(), r.fields)
            for r in etl.rows(OUT, "kind = 'out'")}


def test_a_seed_lookup_and_a_struct_value_end_to_end(project, spark, tables):
    append_raw(spark, RAW, [
        raw_row(TOPIC, 0, 10, "c", id=10, name="Alice"),
        raw_row(TOPIC, 1, 11, "c", id=11, name="Zed"),  # no customer Zed in the seed
        raw_row(TOPIC, 2, 10, "u", id=10, ref=5, name="Alice"),
        deleted(3, 11),
    ])
    append_raw(spark, RAW_STATUS, [
        raw_row(STATUS, 0, 100, "c", ref=10, name="paid"),
        raw_row(STATUS, 1, 101, "c", ref=11, name="open"),
        raw_row(STATUS, 2, 100, "u", ref=10, name="Bob"),
        raw_row(STATUS, 3, 102, "u", ref=12, name="Nobody"),  # its `where` needs a customer: it waits
    ])
    # The seed names Alice twice: she would make two events, so the run must fail and write nothing.
    etl = project({"lookups.yml": TRANSFORM}, seeds={f"{SEED}.csv": "name,id\nAlice,1\nBob,2\nAlice,3\n"},
                  schemas=warehouse_schemas(spark))
    etl.dbt("seed")
    failed = etl.run(OUT, expect_success=False)
    assert not failed.success
    assert "zync: lookup customers" in str(failed.result) and "has 2 rows matching the record lkpOrders@0:0" in str(failed.result)
    assert not spark.catalog.tableExists(f"{SCHEMA}.{OUT}")

    (etl.path / "seeds" / f"{SEED}.csv").write_text("name,id\nAlice,1\nBob,2\n")
    etl.dbt("seed")
    etl.run(OUT)

    nulls = {"id": None, "customer_id": None, "status": None, "ref": None, "name": None}
    assert out_rows(etl) == {
        # denorm + lookup
        0: (10, {**nulls, "id": 10, "customer_id": 1, "status": "paid"}, ["id", "customer_id", "status"]),
        # a record without a lookup row is emitted with nulls for the lookup's columns
        1: (11, {**nulls, "id": 11, "status": "open"}, ["id", "customer_id", "status"]),
        # the struct's fields, exactly: id, ref, name
        2: (10, {**nulls, "id": 10, "ref": 5, "name": "Alice"}, ["id", "ref", "name"]),
        # a stateless rule after an earlier one, with a lookup in its where
        3: (100, {**nulls, "id": 10, "customer_id": 2}, ["id", "customer_id"]),
        # a null struct is a tombstone
        4: (11, None, None),
    }
    done = etl.rows(OUT, "kind = 'done'")
    assert sorted((r.kafka.topic, r.kafka.offset, r.status) for r in done) == (
        [(TOPIC, n, "processed") for n in range(4)] + [(STATUS, n, "processed") for n in range(3)])
    cursors = {r.kafka.topic: r.kafka.offset for r in etl.rows(OUT, "kind = 'cursor'")}
    assert cursors == {TOPIC: 4, STATUS: 3, "lkpOut": 5}

    # dbt's lineage: seed -> model
    manifest = json.loads((etl.path / "target" / "manifest.json").read_text())
    assert f"seed.zync.{SEED}" in manifest["nodes"][f"model.zync.{OUT}"]["depends_on"]["nodes"]


EVOLVED_DDL = (
    "kafka struct<topic: string, partition: int, offset: bigint, timestamp: timestamp>, "
    "key struct<id: bigint>, "
    "value struct<op: string, after: struct<id: bigint, ref: bigint, name: string, note: string>>"
)


def test_a_struct_value_that_gained_a_field_stops_the_run_until_compiled_again(project, spark, tables):
    append_raw(spark, RAW, [raw_row(TOPIC, 0, 10, "u", id=10, ref=1, name="Alice")])
    append_raw(spark, RAW_STATUS, [raw_row(STATUS, 0, 100, "c", ref=10, name="paid")])
    etl = project({"lookups.yml": TRANSFORM}, seeds={f"{SEED}.csv": "name,id\nAlice,1\n"}, schemas=warehouse_schemas(spark))
    # Schema evolution (as ingest does it): value.after gains `note`.
    stamp = EPOCH
    spark.createDataFrame([((TOPIC, 0, 1, stamp), (10,), ("u", (10, 2, "Alice", "vip")))], EVOLVED_DDL) \
        .write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable(f"{SCHEMA}.{RAW}")
    failed = etl.dbt("build", expect_success=False)
    assert not failed.success
    assert "compiled as id, ref, name; the table now has id, ref, name, note" in str(failed.result)
    assert "Run `zync etl compile` again" in str(failed.result)
    assert not spark.catalog.tableExists(f"{SCHEMA}.{OUT}")
