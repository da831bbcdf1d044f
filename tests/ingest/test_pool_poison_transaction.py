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
from zync.tables import raw_table_name
from zync.transactions import cut_table_name, transaction_key
from zync.wire import encode

EXPIRE_AFTER_S = 10.0
KEY_FIELDS = [{"name": "id", "type": "int"}]
ROW_FIELDS = [{"name": "id", "type": "int"}, {"name": "v", "type": ["null", "string"], "default": None}]


class Connector:
    """A Debezium connector's topics with transaction metadata: tables a and b and its transaction topic."""

    def __init__(self, producer, server: str):
        self.producer, self.server = producer, server
        self.tables = {t: producer.topic(debezium.topic(server, "public", t)) for t in ("a", "b")}
        self.transactions = producer.topic(debezium.transaction_topic(server))
        self.ts = 1_000

    def change(self, table: str, row_id: int, xid: int, order: int) -> dict:
        source = debezium.source(self.server, "db", "public", table, self.ts, lsn=xid * 100 + order, tx_id=xid)
        block = debezium.transaction_block(debezium.transaction_id(xid, xid * 100), order, 1)
        return debezium.event("c", {"id": row_id, "v": f"{table}{row_id}"}, None, source, self.ts, block)

    def send_change(self, table: str, row_id: int, xid: int, order: int) -> None:
        topic = self.tables[table]
        self.producer.send(topic, debezium.key_schema(self.server, "public", table, KEY_FIELDS),
                           debezium.value_schema(self.server, "public", table, ROW_FIELDS, transaction=True),
                           [({"id": row_id}, self.change(table, row_id, xid, order))])

    def send_poison(self, table: str, row_id: int) -> None:
        """A record whose key decodes and whose value is not Avro in the Confluent wire format."""
        topic = self.tables[table]
        key_writer = self.producer.registry.register(
            f"{topic}-key", debezium.key_schema(self.server, "public", table, KEY_FIELDS))
        self.producer.raw(topic, encode(key_writer, {"id": row_id}), b"not a change event")
        self.producer.flush()

    def boundary(self, status: str, xid: int, counts: dict[str, int] | None = None) -> None:
        self.ts += 10
        tid = debezium.transaction_id(xid, xid * 100)
        self.producer.send(self.transactions, debezium.TRANSACTION_KEY, debezium.TRANSACTION_VALUE,
                           [({"id": tid}, debezium.transaction_event(status, tid, self.ts, counts))])


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
