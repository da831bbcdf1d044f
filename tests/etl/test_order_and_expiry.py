"""Per-key order and expiry on real Spark/Delta and dbt."""

from __future__ import annotations

import pytest

from tests.etl.scratch import append_raw, drop_tables, raw_row

OUT = "etlc_ord_out"
RAW_A, RAW_B = "etlc_ord_a", "etlc_ord_b"


def transform(expire_a: str = "", expire_b: str = "") -> str:
    return f"""\
inputs:
  - {{topic: etlcOrdA, table: {RAW_A}{expire_a}}}
  - {{topic: etlcOrdB, table: {RAW_B}{expire_b}}}
output: {{topic: etlcOrdOut, model: {OUT}}}
transforms:
  - type: denorm
    where: value.op = 'c'
    left: etlcOrdA
    right: etlcOrdB
    join-on: left.value.after.id = right.value.after.ref
    out: etlcOrdOut
    key: left.key
    value: {{id: left.value.after.id, status: right.value.after.name}}
  - type: stateless
    where: value.op = 'u'
    in: etlcOrdB
    out: etlcOrdOut
    key: {{id: in.value.after.ref}}
    value: {{id: in.value.after.ref, status: in.value.after.name}}
  - type: stateless
    where: value.op = 'u'
    in: etlcOrdA
    out: etlcOrdOut
    key: in.key
    value: {{id: in.value.after.id}}
"""


def A(offset, key, op, **kw):
    return raw_row("etlcOrdA", offset, key, op, id=key, **kw)


def B(offset, key, op, ref, name, **kw):
    return raw_row("etlcOrdB", offset, key, op, id=key, ref=ref, name=name, **kw)


@pytest.fixture
def tables(spark):
    drop_tables(spark, RAW_A, RAW_B, OUT, f"{OUT}__pending")
    append_raw(spark, RAW_A, [])
    append_raw(spark, RAW_B, [])
    yield
    drop_tables(spark, RAW_A, RAW_B, OUT, f"{OUT}__pending")


def outs(p) -> list[tuple]:
    rows = sorted(p.rows(OUT, "kind = 'out'"), key=lambda r: r.kafka.offset)
    return [(r.kafka.offset, r.key.id, {f: r.value[f] for f in r.fields}) for r in rows]


def done(p) -> dict[tuple[str, int], str]:
    return {(r.kafka.topic, r.kafka.offset): r.status for r in p.rows(OUT, "kind = 'done'")}


def test_an_update_waits_for_the_earlier_record_of_its_key(tables, project, spark):
    etl = project({"order.yml": transform()})
    # The status row's create waits for its invoice; its update must wait too.
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new"), B(1, 50, "u", ref=1, name="paid")])
    etl.run(OUT)
    assert outs(etl) == []
    pending = {(r.kafka.topic, r.kafka.offset): r.reason for r in etl.pending(OUT)}
    assert pending[("etlcOrdB", 1)] == "waits for offset 0 with the same key"
    # The invoice arrives behind other invoices: the pair is numbered by the
    # invoice's offset (5), after the update's (1), so the update waits one
    # more run rather than overtake its create.
    append_raw(spark, RAW_A, [A(n, 10 + n, "c") for n in range(5)] + [A(5, 1, "c")])
    etl.run(OUT)
    assert outs(etl) == [(0, 1, {"id": 1, "status": "new"})]
    etl.run(OUT)
    assert outs(etl) == [(0, 1, {"id": 1, "status": "new"}), (1, 1, {"id": 1, "status": "paid"})]


def test_a_dropped_pair_frees_its_partner_which_holds_back_its_own_key(tables, project, spark):
    etl = project({"order.yml": transform()})
    # A0 matches no rule and waits forever; A1 (same key) may not overtake it,
    # so its pair with B0 is dropped; B0 waits again, and so must B1 (its key).
    append_raw(spark, RAW_A, [A(0, 1, "x"), A(1, 1, "c")])
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new"), B(1, 50, "u", ref=1, name="paid")])
    etl.run(OUT)
    assert outs(etl) == []
    assert done(etl) == {}


def test_expired_records_get_done_rows_and_free_their_key_and_the_cursor(tables, project, spark):
    etl = project({"expiry.yml": transform(expire_a=", expire-after: 3", expire_b=", expire-after: 1m")})
    # A0 (key 1) never finds a partner; three newer A records later it expires.
    append_raw(spark, RAW_A, [A(0, 1, "c"), A(1, 2, "c")])
    etl.run(OUT)
    assert done(etl) == {}
    append_raw(spark, RAW_A, [A(2, 3, "c"), A(3, 4, "c"), A(4, 1, "u")])
    # B0 waits 61 s of Kafka time behind B1: past its expire-after of 1m.
    append_raw(spark, RAW_B, [B(0, 60, "c", ref=99, name="lost", seconds=0), B(1, 61, "c", ref=98, name="x", seconds=61)])
    etl.run(OUT)
    assert done(etl) == {
        ("etlcOrdA", 0): "expired",
        ("etlcOrdA", 1): "expired",
        ("etlcOrdA", 4): "processed",  # key 1's update no longer waits for the expired create
        ("etlcOrdB", 0): "expired",
    }
    assert outs(etl) == [(0, 1, {"id": 1})]
    cursors = {}
    for r in etl.rows(OUT, "kind = 'cursor'"):
        cursors[r.kafka.topic] = max(cursors.get(r.kafka.topic, -1), r.kafka.offset)
    assert cursors == {"etlcOrdA": 2, "etlcOrdB": 1, "etlcOrdOut": 1}
    report = {(r.kafka.topic, r.kafka.offset): r.status for r in etl.pending(OUT)}
    assert report == {
        ("etlcOrdA", 0): "expired", ("etlcOrdA", 1): "expired", ("etlcOrdB", 0): "expired",
        ("etlcOrdA", 2): "pending", ("etlcOrdA", 3): "pending", ("etlcOrdB", 1): "pending",
    }
