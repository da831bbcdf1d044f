"""Arrival orders on real Spark/Delta and dbt: orders (A) denormalised with their status (B)."""

from __future__ import annotations

import pytest

from tests.etl.scratch import append_raw, drop_tables, raw_row

OUT = "etlc_arr_out"
RAW_A, RAW_B = "etlc_arr_a", "etlc_arr_b"

TRANSFORM = f"""\
inputs:
  - {{topic: etlcArrA, table: {RAW_A}}}
  - {{topic: etlcArrB, table: {RAW_B}}}
output: {{topic: etlcArrOut, model: {OUT}}}
transforms:
  - type: denorm
    where: value.op IN ('c', 'r')
    left: etlcArrA
    right: etlcArrB
    join-on: left.value.after.id = right.value.after.ref
    out: etlcArrOut
    key: left.key
    value: {{id: left.value.after.id, name: left.value.after.name, status: right.value.after.name}}
  - type: stateless
    where: value.op = 'u'
    in: etlcArrB
    out: etlcArrOut
    key: {{id: in.value.after.ref}}
    value: {{id: in.value.after.ref, status: in.value.after.name}}
  - type: stateless
    where: value.op = 'u'
    in: etlcArrA
    out: etlcArrOut
    key: in.key
    value: {{id: in.value.after.id, name: in.value.after.name}}
  - type: stateless
    where: value.op = 'd'
    in: etlcArrA
    out: etlcArrOut
    key: in.key
    value: null
"""


def A(offset, key, op, name=None):
    return raw_row("etlcArrA", offset, key, op, id=key, name=name)


def B(offset, key, op, ref, name=None):
    return raw_row("etlcArrB", offset, key, op, id=key, ref=ref, name=name)


@pytest.fixture
def etl(project, spark):
    drop_tables(spark, RAW_A, RAW_B, OUT, f"{OUT}__pending")
    p = project({"arrivals.yml": TRANSFORM})
    # Both raw tables exist from the start, as from-kafka leaves them.
    append_raw(spark, RAW_A, [])
    append_raw(spark, RAW_B, [])
    yield p
    drop_tables(spark, RAW_A, RAW_B, OUT, f"{OUT}__pending")


def outs(p) -> list[tuple]:
    rows = p.rows(OUT, "kind = 'out'")
    result = []
    for r in sorted(rows, key=lambda r: r.kafka.offset):
        value = None if r.value is None else {f: r.value[f] for f in r.fields}
        result.append((r.kafka.offset, r.key.id, value))
    return result


def done(p) -> dict[tuple[str, int], str]:
    return {(r.kafka.topic, r.kafka.offset): r.status for r in p.rows(OUT, "kind = 'done'")}


def test_right_side_before_left_side(etl, spark):
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new")])
    etl.run(OUT)
    assert outs(etl) == []
    append_raw(spark, RAW_A, [A(0, 1, "c", "alice")])
    etl.run(OUT)
    assert outs(etl) == [(0, 1, {"id": 1, "name": "alice", "status": "new"})]
    assert done(etl) == {("etlcArrA", 0): "processed", ("etlcArrB", 0): "processed"}


def test_both_sides_in_one_batch_and_one_side_never_arriving(etl, spark):
    append_raw(spark, RAW_A, [A(0, 1, "c", "alice"), A(1, 2, "c", "bob")])
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new")])
    etl.run(OUT)
    assert outs(etl) == [(0, 1, {"id": 1, "name": "alice", "status": "new"})]
    # Bob's status never arrives: he waits, run after run, and holds the cursor.
    etl.run(OUT)
    assert outs(etl) == [(0, 1, {"id": 1, "name": "alice", "status": "new"})]
    assert ("etlcArrA", 1) not in done(etl)
    cursors = {(r.kafka.topic, r.kafka.offset) for r in etl.rows(OUT, "kind = 'cursor'")}
    assert ("etlcArrA", 1) in cursors and ("etlcArrA", 2) not in cursors
    pending = etl.pending(OUT)
    assert [(r.kafka.topic, r.kafka.offset, r.status) for r in pending] == [("etlcArrA", 1, "pending")]


def test_delete_is_a_tombstone_and_updates_keep_exactly_their_fields(etl, spark):
    append_raw(spark, RAW_A, [A(0, 1, "c", "alice")])
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new")])
    etl.run(OUT)
    append_raw(spark, RAW_B, [B(1, 50, "u", ref=1, name="paid")])
    append_raw(spark, RAW_A, [A(1, 1, "u", "alicia"), A(2, 1, "d")])
    etl.run(OUT)
    assert outs(etl) == [
        (0, 1, {"id": 1, "name": "alice", "status": "new"}),
        (1, 1, {"id": 1, "name": "alicia"}),   # partial: no status field at all
        (2, 1, {"id": 1, "status": "paid"}),  # partial: no name field at all
        (3, 1, None),                          # the delete: a tombstone
    ]
    tombstone = etl.rows(OUT, "kind = 'out' and kafka.offset = 3")[0]
    assert tombstone.value is None and tombstone.fields is None
    assert set(done(etl).values()) == {"processed"} and len(done(etl)) == 5
