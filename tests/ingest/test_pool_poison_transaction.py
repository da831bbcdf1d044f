"""A message no one can decode inside a source transaction, in a raw pool keeping its connector's cut, on the
real broker, registry and Delta.

The failing table stops at that message (its earlier records committed, the pool's other topics going on);
the transaction it belongs to can never be whole, so the cut holds before it, and with it every later
transaction of the connector: no view shows a part of it. Once the transaction has waited out the bound it
is given up on and counted, and the cut moves on, even with nothing new to read (a connector gone quiet),
its other tables' changes showing; the failing table's view stays before the message until it is fixed.
"""

from __future__ import annotations

import time

from ingest.pool import PoolIngest
from tests.ingest.conftest import unique, watermarks
from testkit import debezium
from testkit.debezium import Connector
from zync.tables import raw_table_name
from zync.transactions import cut_table_name, transaction_key

EXPIRE_AFTER_S = 10.0
def _ids(spark, view: str) -> list[int]:
    return sorted(r[0] for r in spark.sql(f"select value.after.id from {view}").collect())


def test_a_poison_message_holds_its_transactions_cut_until_the_bound_then_the_others_go_on(producer, target, spark):
    connector = Connector(producer, unique("ptx"))
    a, b = connector.tables["a"], connector.tables["b"]
    views = {topic: f"zync.{raw_table_name(topic)}" for topic in (a, b, connector.transactions)}
    pool = f"zync.{unique('ptx_pool')}"
    job = PoolIngest(target, pool, views, spark, transactions={connector.transactions: connector.server},
                     expire_after_s=EXPIRE_AFTER_S)
    every_topic = [a, b, connector.transactions]
    try:
        # Transaction 1 whole; transaction 2 with b's change undecodable; transaction 3 on a alone, after it.
        connector.boundary("BEGIN", 1)
        connector.send_change("a", 1, 1, 1)
        connector.send_change("b", 1, 1, 2)
        connector.boundary("END", 1, {"public.a": 1, "public.b": 1})
        connector.boundary("BEGIN", 2)
        connector.send_change("a", 2, 2, 1)
        connector.send_poison("b", 2)
        connector.boundary("END", 2, {"public.a": 1, "public.b": 1})
        connector.boundary("BEGIN", 3)
        connector.send_change("a", 3, 3, 1)
        connector.boundary("END", 3, {"public.a": 1})

        first = job.run(watermarks(target, every_topic))
        bound_from = time.monotonic()  # transaction 2's END was read before this
        version = spark.sql(f"describe history {pool}").first()["version"]
        # Tried again within the bound: b fails again, nothing is committed, the cut holds.
        again = job.run(watermarks(target, every_topic))
        assert time.monotonic() - bound_from < EXPIRE_AFTER_S, "the second run came too late to be within the bound"
        assert set(again.failed) == {b} and again.total == 0
        assert spark.sql(f"describe history {pool}").first()["version"] == version

        assert set(first.failed) == {b} and "offset 1" in str(first.failed[b]), first.failed
        assert first.records == {a: 3, b: 1, connector.transactions: 6}
        # The cut stands after transaction 1: a's changes of 2 and 3 are in the pool and shown by no view.
        assert spark.table(pool).where(f"kafka.topic = '{a}'").count() == 3
        assert _ids(spark, views[a]) == [1] and _ids(spark, views[b]) == [1]
        cut = spark.table(cut_table_name(pool)).first()
        assert (cut["transaction"], cut["expired"]) == (transaction_key(debezium.transaction_id(1, 100)), 0)

        # Past the bound, with no new record anywhere: transaction 2 is given up on and counted, 3 shows.
        time.sleep(max(0.0, bound_from + EXPIRE_AFTER_S + 0.5 - time.monotonic()))
        assert job.expiry_due()
        late = job.run(watermarks(target, every_topic))
        assert set(late.failed) == {b} and late.total == 0
        assert _ids(spark, views[a]) == [1, 2, 3]
        assert _ids(spark, views[b]) == [1]  # the failing table's view stays before its undecodable record
        cut = spark.table(cut_table_name(pool)).first()
        assert (cut["transaction"], cut["expired"]) == (transaction_key(debezium.transaction_id(3, 300)), 1)
        assert not job.expiry_due()
    finally:
        job.close()
