"""PostgreSQL -> Debezium (pgoutput, Apicurio's Avro converter) -> Kafka -> `zync consume` / `zync from-kafka`.

A seeded invoices workload with realistic column types: snapshot rows, then inserts, updates
(a column set to NULL and back, a large TOASTed text left unchanged) and deletes, streamed by the
real connector. Every change must arrive (counts and contiguous offsets), every id in the
Confluent header must resolve to its own subject's schema, the raw table's value.after must
hold what PostgreSQL holds, and a mirror of the table must equal PostgreSQL's table value by
value, typed, also after the connector's records are delivered a second time (Debezium
delivers at least once).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from testkit.scratch import make_scratch_project
from zync import kafka_client, topics
from zync.wire import Registry, schema_id_of

DB = "dbz_src"
PREFIX = "dbz"
CONNECTOR = "dbz-invoices-source"
INVOICES = f"{PREFIX}.public.invoices"
STATUS = f"{PREFIX}.public.invoice_status"
RAW_INVOICES = "dbz_raw_invoices"
RAW_STATUS = "dbz_raw_invoice_status"
SNAPSHOT_ROWS = 20
# Characters of `body`: md5 hex of distinct strings, which pglz cannot shrink below PostgreSQL's
# ~2 kB TOAST threshold, so the value is stored out of line (a repeated string would compress inline).
BIG = 20_000
PLACEHOLDER = "__debezium_unavailable_value"  # Debezium's stand-in for an unchanged TOASTed value

SCHEMA = """
create type invoice_kind as enum ('standard', 'credit', 'proforma');
create table invoices (
    id integer primary key,
    customer text not null,
    amount numeric(10,2) not null,
    ratio numeric,
    issued_at timestamptz not null,
    booked_at timestamp,
    due_date date,
    due_time time,
    paid boolean not null default false,
    attachment bytea,
    ref uuid,
    meta jsonb,
    tags text[],
    kind invoice_kind not null,
    note text,
    body text
);
create table invoice_status (
    id integer primary key,
    invoice_id integer not null,
    status text not null,
    changed_at timestamptz not null
);
"""


def seed(first: int, last: int) -> str:
    """Rows first..last of both tables, every column set (body a large text made of the id)."""
    return f"""
insert into invoices
select i, 'customer ' || i, (i * 10.25)::numeric(10,2), i / 8.0, timestamptz '2024-03-10 12:00:00+00' + i * interval '1 hour 1 second',
       timestamp '2024-03-10 08:30:00.123456' + i * interval '1 day', date '2024-01-01' + i, time '09:15:30.5' + i * interval '1 minute',
       i % 2 = 0, decode(lpad(to_hex(i), 8, '0'), 'hex'), ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid,
       jsonb_build_object('n', i, 'tags', jsonb_build_array('a', i)), array['t' || i, 'x'],
       (array['standard', 'credit', 'proforma'])[1 + i % 3]::invoice_kind, case when i % 4 = 0 then null else 'note ' || i end,
       (select string_agg(md5(i || '.' || g), '') from generate_series(1, {BIG // 32}) g)
from generate_series({first}, {last}) i;
insert into invoice_status select i, i, 'new', timestamptz '2024-03-10 12:00:00+00' + i * interval '1 minute'
from generate_series({first}, {last}) i;
"""


# The stream after the snapshot; each statement is one change event (deletes add a tombstone).
STREAM = [
    seed(21, 25),                                                                   # 5 + 5 inserts
    "update invoices set paid = true, amount = 999.99 where id = 3",                 # body unchanged (TOAST)
    "update invoices set note = null where id = 5",
    "update invoices set note = 'back again' where id = 5",
    "update invoices set body = (select string_agg(md5(g::text), '') from generate_series(1, 300) g), "
    "ratio = null where id = 7",                                                     # TOASTed value changed
    "update invoice_status set status = 'paid', changed_at = changed_at + interval '1 day' where id in (3, 7)",
    "delete from invoices where id = 10",
    "delete from invoice_status where id = 10",
]
# inserts 10, updates: 1 + 1 + 1 + 1 (invoices) + 2 (status), deletes: 2 events + 2 tombstones
STREAMED_INVOICES = 5 + 4 + 2
STREAMED_STATUS = 5 + 2 + 2


@pytest.fixture(scope="module")
def streamed(debezium, spark):
    """The workload, streamed by Debezium into both topics, and ingested into raw tables."""
    for table in (RAW_INVOICES, RAW_STATUS):
        spark.sql(f"drop table if exists zync.{table}")
    debezium.database(DB)
    debezium.psql(SCHEMA + seed(1, SNAPSHOT_ROWS), DB)
    debezium.source(CONNECTOR, DB, ["public.invoices", "public.invoice_status"], PREFIX)
    debezium.wait_records(INVOICES, SNAPSHOT_ROWS)
    debezium.wait_records(STATUS, SNAPSHOT_ROWS)
    inserted_state = None
    for statement in STREAM:
        debezium.psql(statement, DB)
        if inserted_state is None:
            inserted_state = {r["id"]: r for r in debezium.query("select * from invoices", DB)}
    counts = {
        INVOICES: debezium.wait_records(INVOICES, SNAPSHOT_ROWS + STREAMED_INVOICES),
        STATUS: debezium.wait_records(STATUS, SNAPSHOT_ROWS + STREAMED_STATUS),
    }
    landed = {
        INVOICES: debezium.ingest(INVOICES, RAW_INVOICES, counts[INVOICES]),
        STATUS: debezium.ingest(STATUS, RAW_STATUS, counts[STATUS]),
    }
    yield {"counts": counts, "landed": landed, "inserted_state": inserted_state,
           "final_state": {r["id"]: r for r in debezium.query("select * from invoices", DB)}}
    debezium.delete(CONNECTOR)


def raw_rows(spark, table: str) -> list[dict]:
    rows = spark.sql(f"select kafka, key, value from zync.{table} order by kafka.partition, kafka.offset").collect()
    return [r.asDict(recursive=True) for r in rows]


def test_every_change_arrives_in_kafka_and_in_the_raw_tables(streamed, spark):
    # Exactly the events the workload makes: nothing lost, nothing doubled.
    assert streamed["counts"] == {INVOICES: SNAPSHOT_ROWS + STREAMED_INVOICES, STATUS: SNAPSHOT_ROWS + STREAMED_STATUS}
    assert streamed["landed"] == streamed["counts"]
    for topic, table in ((INVOICES, RAW_INVOICES), (STATUS, RAW_STATUS)):
        rows = raw_rows(spark, table)
        assert [r["kafka"]["offset"] for r in rows] == list(range(streamed["counts"][topic]))
        ops = [r["value"]["op"] if r["value"] else "tombstone" for r in rows]
        assert ops[:SNAPSHOT_ROWS] == ["r"] * SNAPSHOT_ROWS
        assert ops[SNAPSHOT_ROWS:SNAPSHOT_ROWS + 5] == ["c"] * 5
        assert ops[-2:] == ["d", "tombstone"]
        assert rows[-1]["key"] == {"id": 10} and rows[-2]["value"]["before"]["id"] == 10


def test_ids_in_the_header_resolve_to_their_own_subjects(streamed, target):
    """Content ids (use-id=contentId): each record's key and value ids name its topic's own schemas."""
    registry = Registry(target.schema_registry)
    records = list(topics.consume(target, INVOICES, from_beginning=True, exit_after=0.0))
    assert len(records) == streamed["counts"][INVOICES]
    assert {tuple(r["key"]) for r in records} == {("id",)}
    assert all(r["value"] is None or set(r["value"]) >= {"before", "after", "source", "op"} for r in records)
    consumer = kafka_client.consumer(target, "dbz-header-check", **{"auto.offset.reset": "earliest",
                                                                    "enable.auto.commit": False})
    consumer.subscribe([INVOICES, STATUS])  # every record of both topics, tombstones too
    names = {}
    seen = 0
    while seen < sum(streamed["counts"].values()):
        msg = consumer.poll(10)
        assert msg is not None, f"only {seen} records read back"
        seen += 1
        for part, data in (("key", msg.key()), ("value", msg.value())):
            if data is not None:
                schema = registry.schema(schema_id_of(data, msg.topic())).schema
                full = schema["name"] if "." in schema["name"] else f"{schema.get('namespace')}.{schema['name']}"
                names.setdefault((msg.topic(), part), set()).add(full)
    consumer.close()
    assert names == {
        (INVOICES, "key"): {f"{INVOICES}.Key"}, (INVOICES, "value"): {f"{INVOICES}.Envelope"},
        (STATUS, "key"): {f"{STATUS}.Key"}, (STATUS, "value"): {f"{STATUS}.Envelope"},
    }


def variable_scale(value: dict | None) -> Decimal | None:
    """io.debezium.data.VariableScaleDecimal: {scale, value: unscaled two's-complement bytes}."""
    if value is None:
        return None
    return Decimal(int.from_bytes(value["value"], "big", signed=True)).scaleb(-value["scale"])


EPOCH = dt.date(1970, 1, 1)


def expected_after(row: dict) -> dict:
    """What Debezium's default mapping writes for a PostgreSQL row (rendered by PostgreSQL as JSON)."""
    booked = dt.datetime.fromisoformat(row["booked_at"])
    due_time = dt.time.fromisoformat(row["due_time"])
    return {
        "id": row["id"], "customer": row["customer"], "amount": row["amount"],
        "ratio": Decimal(row["ratio"]) if row["ratio"] is not None else None,
        # io.debezium.time.ZonedTimestamp: an ISO string in UTC
        "issued_at": dt.datetime.fromisoformat(row["issued_at"]).astimezone(dt.timezone.utc),
        # io.debezium.time.MicroTimestamp: microseconds since the epoch, wall clock
        "booked_at": (booked - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1),
        # io.debezium.time.Date: days since the epoch
        "due_date": (dt.date.fromisoformat(row["due_date"]) - EPOCH).days,
        # io.debezium.time.MicroTime: microseconds since midnight
        "due_time": ((due_time.hour * 60 + due_time.minute) * 60 + due_time.second) * 1_000_000 + due_time.microsecond,
        "paid": row["paid"],
        "attachment": bytes.fromhex(row["attachment"][2:]),
        "ref": row["ref"], "meta": row["meta"], "tags": row["tags"], "kind": row["kind"],
        "note": row["note"], "body": row["body"],
    }


def actual_after(after: dict) -> dict:
    return {**after, "ratio": variable_scale(after["ratio"]),
            "issued_at": dt.datetime.fromisoformat(after["issued_at"].replace("Z", "+00:00")),
            "meta": json.loads(after["meta"], parse_float=Decimal), "attachment": bytes(after["attachment"])}


def test_large_text_is_stored_out_of_line(streamed, debezium):
    """The premise of the placeholder check below: PostgreSQL keeps `body` in its TOAST table."""
    rows = debezium.query("select pg_column_size(body) as stored, octet_length(body) as chars "
                          "from invoices where id = 3", DB)
    assert rows[0]["chars"] == BIG and rows[0]["stored"] > 2000
    toasted = debezium.query("select c.reltoastrelid::regclass::text as toast from pg_class c "
                             "where c.relname = 'invoices'", DB)[0]["toast"]
    assert debezium.query(f"select count(*) as n from {toasted}", DB)[0]["n"] > 0


def test_raw_values_hold_what_postgresql_holds(streamed, spark):
    rows = [r for r in raw_rows(spark, RAW_INVOICES) if r["value"] is not None]
    inserted = streamed["inserted_state"]
    # Snapshot and insert events carry whole rows: every column equals PostgreSQL's value.
    for row in rows:
        if row["value"]["op"] in ("r", "c"):
            after = row["value"]["after"]
            assert actual_after(after) == expected_after(inserted[after["id"]]), f"invoice {after['id']}"
    # The last event of each live key: PostgreSQL's current row, except a TOASTed text an update
    # did not touch, for which Debezium (default replica identity) writes its placeholder.
    last = {}
    for row in rows:
        last[row["key"]["id"]] = row["value"]
    final = streamed["final_state"]
    assert sorted(k for k, v in last.items() if v["op"] != "d") == sorted(final)
    for ident, row in final.items():
        after = actual_after(last[ident]["after"])
        expected = expected_after(row)
        if ident in (3, 5):  # updated without touching body
            assert after.pop("body") == PLACEHOLDER and len(expected.pop("body")) == BIG
        assert after == expected, f"invoice {ident}"
    assert len(last[7]["after"]["body"]) == 300 * 32 and last[7]["after"]["ratio"] is None
    assert last[5]["after"]["note"] == "back again"
    assert last[10]["before"]["id"] == 10  # default replica identity: the key only, other columns null


MIRROR = "dbz_invoices_mirror"
MIRRORS = f"""\
mirrors:
  - model: {MIRROR}
    topic: {INVOICES}
    table: {RAW_INVOICES}
"""
UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def mirror_rows(spark) -> dict[int, dict]:
    """The mirror's rows, timestamps as microseconds since the epoch (independent of any time zone)."""
    rows = spark.sql(
        "select id, customer, amount, ratio, unix_micros(issued_at) as issued_at, unix_micros(booked_at) as booked_at,"
        f" due_date, due_time, paid, attachment, ref, meta, tags, kind, note, body from zync.{MIRROR}").collect()
    return {r["id"]: {**r.asDict(recursive=True), "attachment": bytes(r["attachment"]),
                      "meta": json.loads(r["meta"], parse_float=Decimal)} for r in rows}


def typed(row: dict) -> dict:
    """A PostgreSQL row (as PostgreSQL renders it in JSON) as the mirror's typed values should hold it:
    timestamptz the instant, timestamp its wall clock read as UTC, time as text to the microsecond."""
    micros = dt.timedelta(microseconds=1)
    return {
        **row, "ratio": Decimal(row["ratio"]) if row["ratio"] is not None else None,
        "issued_at": (dt.datetime.fromisoformat(row["issued_at"]) - UTC_EPOCH) // micros,
        "booked_at": (dt.datetime.fromisoformat(row["booked_at"]).replace(tzinfo=dt.timezone.utc) - UTC_EPOCH) // micros,
        "due_date": dt.date.fromisoformat(row["due_date"]),
        "due_time": dt.time.fromisoformat(row["due_time"]).strftime("%H:%M:%S.%f"),
        "attachment": bytes.fromhex(row["attachment"][2:]),
    }


def test_a_mirror_equals_postgresql_value_by_value_also_after_a_replay(streamed, debezium, spark, target, tmp_path):
    spark.sql(f"drop table if exists zync.{MIRROR}")
    project = make_scratch_project(tmp_path / "project", {"mirrors.yml": MIRRORS})
    project.dbt("run")  # built from the raw history
    final = {row["id"]: typed(row) for row in debezium.query("select * from invoices", DB)}
    assert mirror_rows(spark) == final  # the unchanged TOASTed bodies of 3 and 5 included

    # Everything after the snapshot is delivered again, then one more change is made.
    replayed = debezium.replay(INVOICES, SNAPSHOT_ROWS)
    assert replayed == STREAMED_INVOICES
    debezium.psql("update invoices set paid = false, note = 'after the replay' where id = 3", DB)
    total = debezium.wait_records(INVOICES, SNAPSHOT_ROWS + 2 * STREAMED_INVOICES + 1)
    landed = streamed["landed"][INVOICES]
    landed += debezium.ingest(INVOICES, RAW_INVOICES, total - landed)
    assert landed == total
    project.dbt("run")  # incremental: the replayed changes, then the new one
    final = {row["id"]: typed(row) for row in debezium.query("select * from invoices", DB)}
    assert final[3]["note"] == "after the replay" and len(final[3]["body"]) == BIG
    assert mirror_rows(spark) == final
    project.dbt("test")  # among them: the incremental mirror equals a rebuild from the raw history


OUTPUT = "dbz_new_invoices"
OUTPUT_TOPIC = "dbz.NewInvoices"
# The invoices demo's rules over these real tables: the pending records carry every column of
# both (an unconstrained numeric, a date, a time, jsonb, arrays, a TOASTed text), the rules read
# four of them.
TRANSFORMS = f"""\
inputs:
  - {{topic: {INVOICES}, table: {RAW_INVOICES}}}
  - {{topic: {STATUS}, table: {RAW_STATUS}}}
output: {{topic: {OUTPUT_TOPIC}, model: {OUTPUT}}}
transforms:
  - type: denorm
    where: value.op IN ('c', 'r')
    left: {INVOICES}
    right: {STATUS}
    join-on: left.value.after.id = right.value.after.invoice_id
    out: {OUTPUT_TOPIC}
    key: left.key
    value:
      id: left.value.after.id
      customer: left.value.after.customer
      due_date: left.value.after.due_date
      invoice_status: right.value.after.status
  - type: stateless
    where: value.op = 'u'
    in: {STATUS}
    out: {OUTPUT_TOPIC}
    key: {{id: in.value.after.invoice_id}}
    value: {{id: in.value.after.invoice_id, invoice_status: in.value.after.status}}
  - type: stateless
    where: value.op = 'd'
    in: {INVOICES}
    out: {OUTPUT_TOPIC}
    key: in.key
    value: null
"""


def test_an_output_over_every_column_type_plans_and_runs(streamed, debezium, spark, tmp_path):
    spark.sql(f"drop table if exists zync.{OUTPUT}")
    project = make_scratch_project(tmp_path / "output", {"invoices.yml": TRANSFORMS})
    project.dbt("run", "--select", OUTPUT)
    out = spark.sql(f"select key.id as id, value, fields from zync.{OUTPUT} where kind = 'out' "
                    "order by kafka.offset").collect()
    pairs = {r["id"]: r["value"].asDict() for r in out if r["fields"] is not None and "customer" in r["fields"]}
    # every invoice ever created had a status: each was paired once, typed (due_date a date)
    created = streamed["inserted_state"]
    assert sorted(pairs) == sorted(created)
    for ident, value in pairs.items():
        assert value["customer"] == created[ident]["customer"]
        assert value["due_date"] == dt.date.fromisoformat(created[ident]["due_date"])
        assert value["invoice_status"] == "new"
    updates = [(r["id"], r["value"]["invoice_status"]) for r in out if r["fields"] == ["id", "invoice_status"]]
    assert sorted(updates) == [(3, "paid"), (7, "paid")]
    assert [r["id"] for r in out if r["value"] is None] == [10]
