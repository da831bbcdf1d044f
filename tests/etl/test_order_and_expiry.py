"""Per-key order and expiry on real Spark/Delta and dbt."""

from __future__ import annotations

import pytest

from service import etl_status
from tests.etl.scratch import append_raw, drop_tables, raw_row
from testkit.scratch import ROOT, set_dbt_vars

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
    return raw_row("etlcOrdA", offset, key, op, **({"id": key} | kw))


def B(offset, key, op, ref, name, **kw):
    return raw_row("etlcOrdB", offset, key, op, id=key, ref=ref, name=name, **kw)


BOTH_PLANS = pytest.mark.parametrize("project", ["one task", "parallel"], indirect=True)


@pytest.fixture
def project(request, project):
    """The scratch project, its runs planned as a small run (one task, macros/etl/output/zync_small_run.sql)
    or as a large one (var zync_one_task_below: 0): per-key order must decide the same."""

    def make(transforms: dict[str, str], **options):
        made = project(transforms, **options)
        plan = getattr(request, "param", "one task")
        if plan == "parallel":
            set_dbt_vars(made.path, zync_one_task_below=0)
        made.plan = plan
        return made

    return make


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


@BOTH_PLANS
def test_an_update_waits_for_the_earlier_record_of_its_key(tables, project, spark):
    etl = project({"order.yml": transform()})
    # The status row's create waits for its invoice; its update must wait too.
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new"), B(1, 50, "u", ref=1, name="paid")])
    etl.run(OUT)
    assert outs(etl) == []
    pending = {(r.kafka.topic, r.kafka.offset): r.reason for r in etl.pending(OUT)}
    assert pending[("etlcOrdB", 1)] == "waits for offset 0 with the same key"
    # The invoice arrives behind other invoices: the pair is numbered by the
    # invoice's offset (5), after the update's (1). The update may not
    # overtake its create, so it moves to the next tier, after the pair: one
    # run, both rows, the create's first.
    append_raw(spark, RAW_A, [A(n, 10 + n, "c") for n in range(5)] + [A(5, 1, "c")])
    etl.run(OUT)
    assert outs(etl) == [(0, 1, {"id": 1, "status": "new"}), (1, 1, {"id": 1, "status": "paid"})]
    assert done(etl) == {("etlcOrdA", 5): "processed", ("etlcOrdB", 0): "processed", ("etlcOrdB", 1): "processed"}
    # Each plan is the one named: a small run computes in one task (macros/etl/output/zync_small_run.sql),
    # a large one does not. The last run's INSERT, as dbt ran it, is in target/run.
    written = next((etl.path / "target" / "run").rglob(f"{OUT}.sql")).read_text()
    assert ("COALESCE(1)" in written) == (etl.plan == "one task")


def test_etl_status_counts_the_pending_records_the_pending_report_shows(tables, project, spark, target, monkeypatch):
    etl = project({"order.yml": transform()})
    # A status create and its update wait for their invoice; invoice 2 waits for its status; invoice 3 is
    # paired with its status (done); the update of invoice 4 is taken by the third rule (done).
    append_raw(spark, RAW_A, [A(0, 2, "c"), A(1, 3, "c"), A(2, 4, "u")])
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new"), B(1, 50, "u", ref=1, name="paid"),
                              B(2, 60, "c", ref=3, name="new")])
    etl.run(OUT)
    report: dict[str, int] = {}
    for row in etl.pending(OUT):
        if row.status == "pending":
            report[row.kafka.topic] = report.get(row.kafka.topic, 0) + 1
    assert report == {"etlcOrdA": 1, "etlcOrdB": 2}
    # The status renders the same stored definition through the scratch project's dbt.
    (etl.path / "profiles").symlink_to(ROOT / "profiles", target_is_directory=True)
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(etl.path))
    (status,) = etl_status.collect(target, [etl.path / "transforms" / "order.yml"], kafka=False)
    assert {i.topic: sum(p.pending for p in i.partitions) for i in status.inputs} == report


@BOTH_PLANS
def test_a_dropped_pair_frees_its_partner_which_holds_back_its_own_key(tables, project, spark):
    etl = project({"order.yml": transform()})
    # A0 waits for a partner that never comes (id 7); A1 (same key) may not
    # overtake it, so its pair with B0 is dropped; B0 waits again, and so must
    # B1 (its key). Key 2's chain is not held back by that cascade: it drains
    # in this one run.
    append_raw(spark, RAW_A, [A(0, 1, "c", id=7), A(1, 1, "c", id=1),
                              A(2, 2, "c"), A(3, 2, "u"), A(4, 2, "u"), A(5, 2, "u")])
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new"), B(1, 50, "u", ref=1, name="paid"),
                              B(2, 60, "c", ref=2, name="new")])
    etl.run(OUT)
    assert outs(etl) == [(0, 2, {"id": 2, "status": "new"}), (1, 2, {"id": 2}), (2, 2, {"id": 2}), (3, 2, {"id": 2})]
    assert done(etl) == {("etlcOrdA", n): "processed" for n in (2, 3, 4, 5)} | {("etlcOrdB", 2): "processed"}


def test_records_no_rule_can_take_are_skipped_and_never_hold_their_key_back(tables, project, spark):
    etl = project({"order.yml": transform()})
    # Debezium's life of a row: created (paired with its status), updated,
    # deleted (no rule takes A's deletes here), its tombstone, created again.
    append_raw(spark, RAW_A, [A(0, 1, "c"), A(1, 1, "u"), A(2, 1, "d"), A(3, 1, None), A(4, 1, "c")])
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new"), B(1, 50, "u", ref=1, name="paid"),
                              B(2, 51, "c", ref=1, name="again"), B(3, 51, None, ref=None, name=None)])
    etl.run(OUT)  # one run drains it all
    assert outs(etl) == [(0, 1, {"id": 1, "status": "new"}), (1, 1, {"id": 1}),
                         (2, 1, {"id": 1, "status": "paid"}), (3, 1, {"id": 1, "status": "again"})]
    assert done(etl) == {("etlcOrdA", 0): "processed", ("etlcOrdA", 1): "processed", ("etlcOrdA", 2): "skipped",
                         ("etlcOrdA", 3): "skipped", ("etlcOrdA", 4): "processed", ("etlcOrdB", 0): "processed",
                         ("etlcOrdB", 1): "processed", ("etlcOrdB", 2): "processed", ("etlcOrdB", 3): "skipped"}
    cursors = {}
    for r in etl.rows(OUT, "kind = 'cursor'"):
        cursors[r.kafka.topic] = max(cursors.get(r.kafka.topic, -1), r.kafka.offset)
    assert cursors == {"etlcOrdA": 5, "etlcOrdB": 4, "etlcOrdOut": 4}
    assert etl.pending(OUT) == []


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


def test_an_unchanged_toasted_value_is_left_out_of_the_row_it_would_overwrite(tables, project, spark):
    etl = project({"order.yml": transform()})
    # The status update leaves its large text alone: Debezium sends its placeholder.
    append_raw(spark, RAW_A, [A(0, 1, "c")])
    append_raw(spark, RAW_B, [B(0, 50, "c", ref=1, name="new"),
                              B(1, 50, "u", ref=1, name="__debezium_unavailable_value")])
    etl.run(OUT)
    # The partial update carries the id only: the sink keeps the status it has.
    assert outs(etl) == [(0, 1, {"id": 1, "status": "new"}), (1, 1, {"id": 1})]
