"""Downstream, an invariant of the source holds after every source transaction applied whole: a consumer that
groups an output's records by their header `zync.transaction.id` never sees a state the source never had; one
that applies record by record (as a sink committing per batch, not per transaction, may) does.

Real PostgreSQL -> Debezium's source (provide.transaction.metadata) -> Kafka -> one `zync run` (a raw pool,
every input at the connector's cut) -> an output over orders and their lines: a denorm pairs each new order
with its line, one rule each passes on an order's and a line's updates. Each update transaction moves a line's
quantity and its order's total together, so an order's total equals its lines' sum after every transaction.
"""

from __future__ import annotations

import io
from itertools import groupby

from service.run import Service
from testkit.invoices import ROOT
from testkit.output_topic import published
from testkit.scratch import make_scratch_project
from zync import kafka_client
from zync.progress import Progress
from zync.tables import raw_table_name

PREFIX = "txhdr"
ORDERS, LINES, TRANSACTIONS = f"{PREFIX}.public.orders", f"{PREFIX}.public.lines", f"{PREFIX}.transaction"
POOL, OUTPUT = f"raw_{PREFIX}", f"{PREFIX}_orders"
TRANSFORM = f"""
inputs:
  - {{topic: {ORDERS}, table: {raw_table_name(ORDERS)}, pool: {POOL}, consistency: transaction}}
  - {{topic: {LINES}, table: {raw_table_name(LINES)}, pool: {POOL}, consistency: transaction}}
output: {{topic: {OUTPUT}, model: {OUTPUT}}}
transforms:
  - type: denorm
    where: value.op = 'c'
    left: {ORDERS}
    right: {LINES}
    join-on: left.value.after.id = right.value.after.order_id
    out: {OUTPUT}
    key: {{id: left.value.after.id}}
    value: {{order_id: left.value.after.id, total: left.value.after.total, line_id: right.value.after.id,
             qty: right.value.after.qty}}
  - type: stateless
    where: value.op = 'u'
    in: {ORDERS}
    out: {OUTPUT}
    key: {{id: in.value.after.id}}
    value: {{order_id: in.value.after.id, total: in.value.after.total}}
  - type: stateless
    where: value.op = 'u'
    in: {LINES}
    out: {OUTPUT}
    key: {{id: in.value.after.order_id}}
    value: {{order_id: in.value.after.order_id, line_id: in.value.after.id, qty: in.value.after.qty}}
"""
ORDER_COUNT, UPDATES = 3, 3



def violations(groups: list[list[dict]]) -> int:
    """Apply each group of records at once to orders and lines; count the groups after which some order's total
    differs from its lines' sum."""
    totals: dict[int, int] = {}
    lines: dict[int, tuple[int, int]] = {}
    found = 0
    for group in groups:
        for value in group:
            if value.get("total") is not None:
                totals[value["order_id"]] = value["total"]
            if value.get("line_id") is not None:
                lines[value["line_id"]] = (value["order_id"], value["qty"])
        sums = {o: sum(q for order, q in lines.values() if order == o) for o in totals}
        found += any(totals[o] != sums[o] for o in totals)
    return found


def test_an_invariant_holds_after_every_transaction_a_consumer_applies_by_its_header(debezium, target, spark,
                                                                                     tmp_path):
    database = debezium.database(PREFIX)
    debezium.psql("create table orders (id int primary key, total int);"
                  "create table lines (id int primary key, order_id int, qty int);", database)
    debezium.source(PREFIX, database, ["public.orders", "public.lines"], PREFIX,
                    **{"provide.transaction.metadata": "true"})
    # Each order with its line in one transaction; then transactions moving a line's quantity and its order's
    # total together (the line first).
    work = [f"begin; insert into orders values ({o}, {10 * o}); insert into lines values ({o}, {o}, {10 * o}); commit;"
            for o in range(1, ORDER_COUNT + 1)]
    work += [f"begin; update lines set qty = qty + {u} where id = {o}; "
             f"update orders set total = total + {u} where id = {o}; commit;"
             for u in range(1, UPDATES + 1) for o in range(1, ORDER_COUNT + 1)]
    debezium.psql("".join(work), database)
    debezium.wait_records(TRANSACTIONS, 2 * len(work))
    expected = ORDER_COUNT + 2 * UPDATES * ORDER_COUNT

    project = make_scratch_project(tmp_path / "hdr", {"hdr.yml": TRANSFORM}, spark=spark)
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    with Service(target, root=project.path, status=Progress.for_run(stream=io.StringIO(), live=False)) as service:
        service.discovery.every_s = 0
        for _ in range(6):
            service.cycle()
            if OUTPUT in kafka_client.topic_names(target) and \
                    kafka_client.high_water_marks(target, OUTPUT)[0] >= expected:
                break
    records = published(target, OUTPUT, least=expected, polls=120)
    assert len(records) == expected
    assert all(r.transaction is not None for r in records)
    # Each transaction's records are contiguous: the header changes once per transaction.
    by_header = [[r.value for r in group] for _, group in groupby(records, key=lambda r: r.transaction)]
    assert [len(g) for g in by_header] == [1] * ORDER_COUNT + [2] * (UPDATES * ORDER_COUNT)
    assert violations(by_header) == 0
    # Record by record, every update transaction shows its line moved and its order's total not yet.
    assert violations([[r.value] for r in records]) == UPDATES * ORDER_COUNT
