"""An output taking whole source transactions publishes them in exact commit order: the order of their
ENDs in the connector's transaction topic, not their commit time, not their ids.

Two PostgreSQL transactions committed in the same millisecond, xids 999 and 1000 (as text "1000" < "999"),
both updating invoice 1's status, the second also creating invoice 7: through one `zync run` on the real
broker, registry, Delta, dbt and egress, the output holds 999's row, then 1000's two rows together, in the
order of Debezium's `transaction.total_order`. Each run looks the ENDs up from the output's cursor of the
transaction topic on, which it moves to the lowest END it started with pending.
"""

from __future__ import annotations

import io
import os

from service.run import Service
from testkit import debezium
from testkit.invoices import ROOT
from testkit.output_topic import published
from testkit.scratch import make_scratch_project
from tests.ingest.conftest import Producer
from zync.progress import Progress
from zync.tables import raw_table_name

SERVER = f"wco{os.getpid()}"
INVOICES, STATUSES = (debezium.topic(SERVER, "public", t) for t in ("invoices", "statuses"))
TRANSACTIONS = debezium.transaction_topic(SERVER)
POOL, OUTPUT = f"raw_{SERVER}", f"{SERVER}_invoices"
TRANSFORM = f"""
inputs:
  - {{topic: {INVOICES}, table: {raw_table_name(INVOICES)}, pool: {POOL}, consistency: transaction}}
  - {{topic: {STATUSES}, table: {raw_table_name(STATUSES)}, pool: {POOL}, consistency: transaction}}
output: {{topic: {OUTPUT}, model: {OUTPUT}}}
transforms:
  - type: stateless
    where: value.op = 'c'
    in: {INVOICES}
    out: {OUTPUT}
    key: {{id: in.value.after.id}}
    value: {{id: in.value.after.id, status: in.value.after.customer}}
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
COMMITTED_MS = 1_700_000_000_000  # both transactions' commit time


def change(producer: Producer, xid: int, order: int, table: str, op: str, row: dict) -> None:
    lsn = xid * 100 + order
    source = debezium.source(SERVER, "db", "public", table, COMMITTED_MS, lsn=lsn, tx_id=xid)
    block = debezium.transaction_block(debezium.transaction_id(xid, lsn), order, 1)
    producer.send(debezium.topic(SERVER, "public", table), debezium.key_schema(SERVER, "public", table, KEY),
                  debezium.value_schema(SERVER, "public", table, ROWS[table], transaction=True),
                  [({"id": row["id"]}, debezium.event(op, row, None, source, COMMITTED_MS, block))])


def boundary(producer: Producer, status: str, xid: int, counts: dict[str, int] | None = None) -> None:
    tid = debezium.transaction_id(xid, xid * 100 + 99)
    producer.send(TRANSACTIONS, debezium.TRANSACTION_KEY, debezium.TRANSACTION_VALUE,
                  [({"id": tid}, debezium.transaction_event(status, tid, COMMITTED_MS, counts))])



def test_transactions_of_one_millisecond_come_out_in_end_order(target, spark, tmp_path):
    project = make_scratch_project(tmp_path / "co", {"co.yml": TRANSFORM}, spark=spark)
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    producer = Producer(target)
    for topic in (INVOICES, STATUSES, TRANSACTIONS):
        producer.topic(topic)
    boundary(producer, "BEGIN", 1)
    change(producer, 1, 1, "invoices", "c", {"id": 1, "customer": "new"})  # the invoice, a transaction before
    boundary(producer, "END", 1, {"public.invoices": 1})
    # 999 commits first; 1000 in the same millisecond, its status change first in it, then invoice 7.
    boundary(producer, "BEGIN", 999)
    change(producer, 999, 1, "statuses", "u", {"id": 1, "invoice_id": 1, "status": "sent"})
    boundary(producer, "END", 999, {"public.statuses": 1})
    boundary(producer, "BEGIN", 1000)
    change(producer, 1000, 1, "statuses", "u", {"id": 1, "invoice_id": 1, "status": "paid"})
    change(producer, 1000, 2, "invoices", "c", {"id": 7, "customer": "new"})
    boundary(producer, "END", 1000, {"public.statuses": 1, "public.invoices": 1})

    with Service(target, root=project.path, status=Progress.for_run(stream=io.StringIO(), live=False)) as service:
        service.discovery.every_s = 0
        for _ in range(4):
            service.cycle()
            if len(published(target, OUTPUT)) == 4:
                break
        assert [(o, v["id"], v["status"], h) for o, v, h in published(target, OUTPUT)] == [
            (0, 1, "new", "1"), (1, 1, "sent", "999"), (2, 1, "paid", "1000"), (3, 7, "new", "1000")]
        assert cursor(spark) == 1  # the lowest END the run started with pending: transaction 1's
        # A later transaction: the next run looks its END up from that cursor, and moves it to its END.
        boundary(producer, "BEGIN", 1001)
        change(producer, 1001, 1, "statuses", "u", {"id": 7, "invoice_id": 7, "status": "paid"})
        boundary(producer, "END", 1001, {"public.statuses": 1})
        for _ in range(4):
            service.cycle()
            if len(published(target, OUTPUT)) == 5:
                break
    assert [(o, v["id"], v["status"], h) for o, v, h in published(target, OUTPUT)][4:] == [(4, 7, "paid", "1001")]
    assert cursor(spark) == 7


def cursor(spark) -> int | None:
    """The output's cursor of the transaction topic: where the next run starts looking ENDs up."""
    return spark.sql(f"select max(kafka.offset) from zync.{OUTPUT} where kind = 'cursor' "
                     f"and kafka.topic = '{TRANSACTIONS}'").first()[0]
