"""A raw pool keeps a real Debezium connector's cut: the newest source transaction up to which every
transaction has all of its changes in the pool, and each data topic's last offset at or before it.

PostgreSQL -> Debezium's source (provide.transaction.metadata) -> Kafka -> the pool. A transaction
over two tables read half (one table's topic not taken yet) leaves the cut where it was; read
whole, the cut takes it; a restart in between resumes the cut from the pool and goes on.
"""

from __future__ import annotations

import json

from ingest.pool import PoolIngest
from ingest.table import RawTable
from zync import kafka_client
from zync.tables import raw_table_name
from zync.transactions import CUT_TAG, Cut

PREFIX = "txcut"
ORDERS, LINES, TRANSACTIONS = f"{PREFIX}.public.orders", f"{PREFIX}.public.lines", f"{PREFIX}.transaction"
POOL = "zync.raw_txcut_pool"


def _pool(target, spark) -> PoolIngest:
    views = {t: view(t) for t in (ORDERS, LINES, TRANSACTIONS)}
    return PoolIngest(target, POOL, views, spark, transactions={TRANSACTIONS: PREFIX})


def _run(job: PoolIngest, target, topics: set[str]) -> None:
    watcher, admin = kafka_client.consumer(target, group="test-cut-watch"), kafka_client.admin(target)
    try:
        run = job.run(kafka_client.watermarks(watcher, admin, {ORDERS, LINES, TRANSACTIONS}), topics)
    finally:
        watcher.close()
    assert not run.failed, run.failed


def view(topic: str) -> str:
    return f"zync.{raw_table_name(topic)}"


def _offsets(spark, relation: str, topic: str) -> list[int]:
    return [r[0] for r in spark.sql(f"select kafka.offset from {relation} where kafka.topic = '{topic}' "
                                    "order by kafka.offset").collect()]


def _stored_cut(spark) -> Cut:
    """The cut the pool's newest commit carries (its file's tag)."""
    version = spark.sql(f"describe history {POOL} limit 1").first()["version"]
    return Cut.from_dict(json.loads(RawTable(spark, name=POOL).newest_tag(CUT_TAG, version))[TRANSACTIONS])


def test_the_pool_keeps_a_cut_of_whole_transactions_through_a_restart(debezium, target, spark):
    database = debezium.database("txcut")
    debezium.psql("create table orders (id int primary key, total int);"
                  "create table lines (id int primary key, order_id int, qty int);"
                  "insert into orders values (1, 10); insert into lines values (1, 1, 10);", database)
    debezium.source("txcut", database, ["public.orders", "public.lines"], PREFIX,
                    **{"provide.transaction.metadata": "true"})
    debezium.wait_records(ORDERS, 1)
    debezium.wait_records(LINES, 1)
    # One transaction over both tables (an order and two lines), then one over lines alone.
    debezium.psql("begin; insert into orders values (2, 20); insert into lines values (2, 2, 5), (3, 2, 15); commit;"
                  "begin; update lines set qty = 6 where id = 2; commit;", database)
    debezium.wait_records(ORDERS, 2)
    debezium.wait_records(LINES, 4)
    debezium.wait_records(TRANSACTIONS, 4)  # BEGIN and END of each

    # The orders and the transactions read, not the lines: the order of transaction 1 is held back.
    job = _pool(target, spark)
    try:
        _run(job, target, {ORDERS, TRANSACTIONS})
    finally:
        job.close()
    half = _stored_cut(spark)
    assert half.end_offset == -1 and half.offsets == {(ORDERS, 0): 0}  # the snapshot's order, not the new one
    # The raw view of orders stops at the cut: the pool holds the new order, the view does not show it yet.
    assert _offsets(spark, POOL, ORDERS) == [0, 1] and _offsets(spark, view(ORDERS), ORDERS) == [0]

    # A restart, then the lines too: both transactions are whole, every change behind the cut.
    again = _pool(target, spark)
    try:
        _run(again, target, {ORDERS, LINES, TRANSACTIONS})
        whole = _stored_cut(spark)
        assert whole.end_offset == 3 and whole.offsets == {(ORDERS, 0): 1, (LINES, 0): 3}
        assert _offsets(spark, view(ORDERS), ORDERS) == [0, 1] and _offsets(spark, view(LINES), LINES) == [0, 1, 2, 3]
        (row,) = spark.table(f"{POOL}__cut").collect()
        assert (row["connector"], row["end_offset"], row["offsets"]) == (TRANSACTIONS, 3, {ORDERS: {0: 1}, LINES: {0: 3}})
        ends = spark.sql(f"select value.id, value.ts_ms from zync.{raw_table_name(TRANSACTIONS)} "
                         "where value.status = 'END' order by kafka.offset").collect()
        assert (whole.transaction, whole.committed_ms) == (ends[-1]["id"], ends[-1]["ts_ms"])
        assert whole.expired == 0

        # The next transaction, read by the same run: the cut goes on from where it stood.
        debezium.psql("begin; delete from lines where id = 3; update orders set total = 5 where id = 2; commit;",
                      database)
        debezium.wait_records(TRANSACTIONS, 6)
        debezium.wait_records(ORDERS, 3)
        debezium.wait_records(LINES, 5)
        _run(again, target, {ORDERS, LINES, TRANSACTIONS})
    finally:
        again.close()
    last = _stored_cut(spark)
    assert last.end_offset == 5 and last.offsets[(ORDERS, 0)] == 2 and last.offsets[(LINES, 0)] >= 4
