"""Debezium's replays in the ETL: a change delivered again must not take part in an event again.

Debezium delivers at least once: a Connect task that dies before its offsets are committed sends
its last changes again (the same bytes, new offsets). The raw tables here hold Debezium-like
values with a source position (`value.source`: LSN and ts_ms), as the real connector writes them
(tests/debezium/test_end_to_end.py replays the real connector's records).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.etl.scratch import EPOCH, append_raw, drop_tables

OUT = "etlc_rpl_out"
RAW_A, RAW_B = "etlc_rpl_a", "etlc_rpl_b"
# A map in the value too: map columns are not comparable in Spark, the replay check must cope.
DDL = (
    "kafka struct<topic: string, partition: int, offset: bigint, timestamp: timestamp>, "
    "key struct<id: bigint>, "
    "value struct<op: string, after: struct<id: bigint, ref: bigint, name: string>, "
    "source: struct<lsn: bigint, ts_ms: bigint>, ts_ms: bigint, headers: map<string, string>>"
)

# The invoices demo's shape (demo/invoices/transforms/invoices.yml): creates paired with their
# status, updates of either side as partial rows, a delete as a tombstone.
TRANSFORM = f"""\
inputs:
  - {{topic: etlcRplA, table: {RAW_A}}}
  - {{topic: etlcRplB, table: {RAW_B}}}
output: {{topic: etlcRplOut, model: {OUT}}}
transforms:
  - type: denorm
    where: value.op IN ('c', 'r')
    left: etlcRplA
    right: etlcRplB
    join-on: left.value.after.id = right.value.after.ref
    out: etlcRplOut
    key: left.key
    value: {{id: left.value.after.id, name: left.value.after.name, status: right.value.after.name}}
  - type: stateless
    where: value.op = 'u'
    in: etlcRplB
    out: etlcRplOut
    key: {{id: in.value.after.ref}}
    value: {{id: in.value.after.ref, status: in.value.after.name}}
  - type: stateless
    where: value.op = 'u'
    in: etlcRplA
    out: etlcRplOut
    key: in.key
    value: {{id: in.value.after.id, name: in.value.after.name}}
  - type: stateless
    where: value.op = 'd'
    in: etlcRplA
    out: etlcRplOut
    key: in.key
    value: null
"""


def change(topic: str, key: int, op: str, lsn: int | None, id: int | None = None, ref: int | None = None,
           name: str | None = None) -> tuple:
    """A change as Debezium writes it (lsn None: no source position, as in hand-made records)."""
    source = None if lsn is None else (lsn, 1_700_000_000_000 + lsn)
    value = (op, (key if id is None else id, ref, name), source, None if lsn is None else 1_700_000_000_500 + lsn,
             {"lsn": str(lsn)})
    return topic, key, value


def at(offset: int, record: tuple) -> tuple:
    """The record at an offset of partition 0 (a replay is the same record at a later offset)."""
    topic, key, value = record
    return (topic, 0, offset, EPOCH + timedelta(seconds=offset)), (key,), value


def tombstone(topic: str, offset: int, key: int) -> tuple:
    return (topic, 0, offset, EPOCH + timedelta(seconds=offset)), (key,), None


@pytest.fixture
def tables(spark):
    drop_tables(spark, RAW_A, RAW_B, OUT, f"{OUT}__pending")
    append_raw(spark, RAW_A, [], ddl=DDL)
    append_raw(spark, RAW_B, [], ddl=DDL)
    yield
    drop_tables(spark, RAW_A, RAW_B, OUT, f"{OUT}__pending")


def outs(p) -> list[tuple]:
    rows = sorted(p.rows(OUT, "kind = 'out'"), key=lambda r: r.kafka.offset)
    return [(r.key.id, None if r.fields is None else {f: r.value[f] for f in r.fields}) for r in rows]


def done(p) -> dict[tuple[str, int], str]:
    return {(r.kafka.topic, r.kafka.offset): r.status for r in p.rows(OUT, "kind = 'done'")}


def test_a_replayed_create_neither_pairs_again_nor_holds_back_its_key(tables, project, spark):
    etl = project({"replay.yml": TRANSFORM})
    invoice = change("etlcRplA", 1, "c", lsn=100, name="taco")
    status_new = change("etlcRplB", 50, "u", lsn=101, ref=1, name="new")
    append_raw(spark, RAW_A, [at(0, invoice)], ddl=DDL)
    append_raw(spark, RAW_B, [at(0, change("etlcRplB", 50, "c", lsn=99, ref=1, name="new"))], ddl=DDL)
    etl.run(OUT)
    assert outs(etl) == [(1, {"id": 1, "name": "taco", "status": "new"})]

    # The task died: the invoice's create comes again (same bytes), then the invoice is updated and
    # deleted. The status is set twice to the same value by two UPDATEs: equal rows, but two changes
    # (their source positions differ), so both are processed.
    append_raw(spark, RAW_A, [at(1, invoice), at(2, change("etlcRplA", 1, "u", lsn=110, name="tacos")),
                              at(3, change("etlcRplA", 1, "d", lsn=120)), tombstone("etlcRplA", 4, 1)], ddl=DDL)
    append_raw(spark, RAW_B, [at(1, status_new), at(2, change("etlcRplB", 50, "u", lsn=105, ref=1, name="new"))],
               ddl=DDL)
    etl.run(OUT)
    # Before replays were recognised, the replayed create waited for a partner that never came,
    # and per-key order held the update and the delete back: the sink kept the row forever.
    assert outs(etl)[1:] == [(1, {"id": 1, "status": "new"}), (1, {"id": 1, "name": "tacos"}),
                             (1, {"id": 1, "status": "new"}), (1, None)]
    assert done(etl) == {("etlcRplA", 0): "processed", ("etlcRplA", 1): "replayed", ("etlcRplA", 2): "processed",
                         ("etlcRplA", 3): "processed", ("etlcRplA", 4): "skipped",
                         ("etlcRplB", 0): "processed", ("etlcRplB", 1): "processed", ("etlcRplB", 2): "processed"}
    assert etl.pending(OUT) == []
    etl.dbt("test", "--select", OUT)  # the exactly-once bookkeeping holds with replayed records


def test_replays_are_looked_for_within_a_window_of_offsets(tables, project, spark):
    etl = project({"replay.yml": TRANSFORM})
    updates = [change("etlcRplA", 1 + n, "u", lsn=200 + n, name=f"v{n}") for n in range(4)]
    hand_made = change("etlcRplA", 9, "u", lsn=None, name="same")
    append_raw(spark, RAW_A, [at(n, u) for n, u in enumerate(updates)] + [at(4, hand_made)], ddl=DDL)
    window = ["--vars", "{zync_replay_window: 4}"]
    etl.dbt("run", "--select", OUT, *window)
    assert len(outs(etl)) == 5
    # The cursor is past all of them now. Offset 5 replays offset 1 (4 offsets back: within the
    # window), offset 6 replays offset 0 (6 back: outside it, so it is processed), and offset 7
    # repeats a record without a source position (not a Debezium change: never a replay).
    append_raw(spark, RAW_A, [at(5, updates[1]), at(6, updates[0]), at(7, hand_made)], ddl=DDL)
    etl.dbt("run", "--select", OUT, *window)
    assert {k: v for k, v in done(etl).items() if k[1] >= 5} == {
        ("etlcRplA", 5): "replayed", ("etlcRplA", 6): "processed", ("etlcRplA", 7): "processed"}
    assert outs(etl)[5:] == [(1, {"id": 1, "name": "v0"}), (9, {"id": 9, "name": "same"})]
