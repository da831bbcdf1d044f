"""An output whose inputs read at their connector's cut (`consistency: transaction`) takes and publishes
source transactions whole, through one `zync run` on the real broker, registry, Delta, dbt and egress.

Debezium-shaped changes with transaction metadata, produced straight to Kafka: invoices and their statuses,
paired by a denorm. A transaction over both tables whose END is read before its statuses are: the pool holds
its invoices, the output takes none of them. Once whole, its out rows come together, at contiguous offsets,
before those of a later transaction whose driving record sits at a lower offset, each record carrying its
source transaction's id in the header `zync.transaction.id`.
"""

from __future__ import annotations

import io
import os

from service import etl_status
from service.run import Service
from testkit import debezium
from testkit.invoices import ROOT
from testkit.output_topic import published
from testkit.scratch import make_scratch_project
from tests.ingest.conftest import Producer
from zync.progress import Progress
from zync.tables import raw_table_name
from zync.transactions import transaction_key

SCHEMA = "zync"
SERVER = f"wtx{os.getpid()}"
INVOICES, STATUSES = (debezium.topic(SERVER, "public", t) for t in ("invoices", "statuses"))
TRANSACTIONS = debezium.transaction_topic(SERVER)
POOL, OUTPUT = f"raw_{SERVER}", f"{SERVER}_paid"
TRANSFORM = f"""
inputs:
  - {{topic: {INVOICES}, table: {raw_table_name(INVOICES)}, pool: {POOL}, consistency: transaction}}
  - {{topic: {STATUSES}, table: {raw_table_name(STATUSES)}, pool: {POOL}, consistency: transaction}}
output: {{topic: {OUTPUT}, model: {OUTPUT}}}
transforms:
  - type: denorm
    where: value.op IN ('c', 'r')
    left: {INVOICES}
    right: {STATUSES}
    join-on: left.value.after.id = right.value.after.invoice_id
    out: {OUTPUT}
    key: left.key
    value: {{id: left.value.after.id, customer: left.value.after.customer, status: right.value.after.status}}
  - type: stateless
    where: value.op = 'u'
    in: {STATUSES}
    out: {OUTPUT}
    key: {{id: in.value.after.invoice_id}}
    value: {{id: in.value.after.invoice_id, status: in.value.after.status}}
"""
KEY = [{"name": "id", "type": "int"}]
ROWS = {"invoices": [{"name": "id", "type": "int"}, {"name": "customer", "type": "string"}],
        "statuses": [{"name": "id", "type": "int"}, {"name": "invoice_id", "type": "int"},
                     {"name": "status", "type": "string"}]}


class Source:
    """One source database's transactions, as Debezium's PostgreSQL connector writes them (ids `<xid>:<lsn>`,
    the LSN of the event at hand, so one transaction's events differ in it)."""

    def __init__(self, producer: Producer):
        self.producer = producer
        for topic in (INVOICES, STATUSES, TRANSACTIONS):
            producer.topic(topic)

    def change(self, xid: int, order: int, table: str, op: str, row: dict) -> None:
        ts = xid * 1000  # the commit time: later transactions commit later
        source = debezium.source(SERVER, "db", "public", table, ts, lsn=xid * 100 + order, tx_id=xid)
        block = debezium.transaction_block(debezium.transaction_id(xid, xid * 100 + order), order, order)
        value = debezium.event(op, row, None, source, ts, block)
        self.producer.send(debezium.topic(SERVER, "public", table),
                           debezium.key_schema(SERVER, "public", table, KEY),
                           debezium.value_schema(SERVER, "public", table, ROWS[table], transaction=True),
                           [({"id": row["id"]}, value)])

    def boundary(self, status: str, xid: int, counts: dict[str, int] | None = None) -> None:
        tid = debezium.transaction_id(xid, xid * 100 + 99)
        self.producer.send(TRANSACTIONS, debezium.TRANSACTION_KEY, debezium.TRANSACTION_VALUE,
                           [({"id": tid}, debezium.transaction_event(status, tid, xid * 1000, counts))])



def test_an_output_takes_and_publishes_source_transactions_whole(target, spark, tmp_path, monkeypatch):
    project = make_scratch_project(tmp_path / "tx", {"tx.yml": TRANSFORM}, spark=spark)
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    source = Source(Producer(target))
    # Transaction 1: invoice 1 with its status, and invoices 10-12 whose statuses never come (they wait).
    source.boundary("BEGIN", 1)
    for order, invoice in enumerate((1, 10, 11, 12), start=1):
        source.change(1, order, "invoices", "c", {"id": invoice, "customer": f"c{invoice}"})
    source.change(1, 5, "statuses", "c", {"id": 1, "invoice_id": 1, "status": "open"})
    source.boundary("END", 1, {"public.invoices": 4, "public.statuses": 1})
    # Transaction 2 over both tables: its invoices and its END are read before its statuses are.
    source.boundary("BEGIN", 2)
    source.change(2, 1, "invoices", "c", {"id": 2, "customer": "c2"})
    source.change(2, 2, "invoices", "c", {"id": 3, "customer": "c3"})
    source.boundary("END", 2, {"public.invoices": 2, "public.statuses": 2})

    with Service(target, root=project.path, status=Progress.for_run(stream=io.StringIO(), live=False)) as service:
        service.discovery.every_s = 0
        for _ in range(4):
            service.cycle()
            if published(target, OUTPUT):
                break
        pool = spark.table(f"{SCHEMA}.{POOL}")
        # Transaction 2's invoices are in the pool; the output took none of them, not even as pending.
        assert pool.where(f"kafka.topic = '{INVOICES}' and kafka.offset in (4, 5)").count() == 2
        output = spark.table(f"{SCHEMA}.{OUTPUT}")
        assert output.where(f"kind = 'done' and kafka.topic = '{INVOICES}' and kafka.offset >= 4").count() == 0
        assert [(o, v["id"], h) for o, v, h in published(target, OUTPUT)] == [(0, 1, "1")]

        # Transaction 2's statuses, then transaction 3: invoice 1 paid (a status update, at a lower offset
        # of its topic than transaction 2's invoices are of theirs).
        source.change(2, 3, "statuses", "c", {"id": 2, "invoice_id": 2, "status": "open"})
        source.change(2, 4, "statuses", "c", {"id": 3, "invoice_id": 3, "status": "open"})
        source.boundary("BEGIN", 3)
        source.change(3, 1, "statuses", "u", {"id": 1, "invoice_id": 1, "status": "paid"})
        source.boundary("END", 3, {"public.statuses": 1})
        for _ in range(4):
            service.cycle()
            if len(published(target, OUTPUT)) == 4:
                break

    records = published(target, OUTPUT)
    # Each transaction's records together, in commit order, at contiguous offsets, each with its transaction.
    assert [(o, v["id"], v["status"], h) for o, v, h in records] == [
        (0, 1, "open", "1"), (1, 2, "open", "2"), (2, 3, "open", "2"), (3, 1, "paid", "3")]
    # The header is the transaction's id as zync.transactions names it (the SQL twin agrees).
    assert records[1][2] == transaction_key(debezium.transaction_id(2, 299))
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(project.path))
    text = etl_status.render(etl_status.collect(target, [project.path / "transforms" / "tx.yml"]))
    assert f"its inputs stop at the cut of {TRANSACTIONS}: after transaction 3" in text
