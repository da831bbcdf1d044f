"""kill -9 of `zync run` between a source transaction's topics: the transaction is neither lost nor torn.

A connector's mirrors at its cut (`consistency: transaction`, one raw pool), fed Debezium-shaped changes
with transaction metadata on the real broker and registry. Transaction 2 touches tables a and b; its change
to a and its END are on the broker, its change to b not yet (Debezium writes each table's topic on its
own). A `zync run` process takes a's change into the pool, and is killed with kill -9 there: no reader saw
a's change, since the cut stands before transaction 2. Then b's change and a third transaction arrive, and
a restarted run takes them: after every cycle both mirrors show one state the source passed through, the
pool holds each record once, and the cut ends after transaction 3.
"""

from __future__ import annotations

import time

from service.run import Service
from tests.ingest.conftest import Producer, unique
from testkit import debezium
from testkit.debezium import Connector
from testkit.harness import RunProcess
from testkit.invoices import ROOT
from testkit.scratch import make_scratch_project
from zync import kafka_client
from zync.progress import Progress
from zync.transactions import cut_table_name, transaction_key


def _ids(spark, mirror: str) -> list[int] | None:
    if not spark.catalog.tableExists(mirror):
        return None
    return sorted(r["id"] for r in spark.sql(f"select id from {mirror}").collect())


def test_kill_9_between_a_transactions_topics_loses_and_tears_nothing(target, spark, tmp_path):
    server = unique("killtx")
    connector = Connector(Producer(target), server)
    pool, mirrors = "zync.raw_killtx", {t: f"zync.killtx_{t}" for t in ("a", "b")}
    entry = (f"mirrors:\n  - topics: '{server}\\.public\\..*'\n    name: 'killtx_{{table}}'\n"
             "    pool: raw_killtx\n    consistency: transaction\n")
    project = make_scratch_project(tmp_path / "killtx", {"db.yml": entry}, spark=spark,
                                   topics=lambda: kafka_client.topic_names(target))
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)

    def state() -> tuple[list[int] | None, ...]:
        return tuple(_ids(spark, m) for m in mirrors.values())

    def pooled(table: str) -> int:
        if not spark.catalog.tableExists(pool):
            return 0
        return spark.table(pool).where(f"kafka.topic = '{connector.tables[table]}'").count()

    connector.boundary("BEGIN", 1)
    connector.send_change("a", 1, 1, 1)
    connector.send_change("b", 1, 1, 2)
    connector.boundary("END", 1, {"public.a": 1, "public.b": 1})
    connector.boundary("BEGIN", 2)
    connector.send_change("a", 2, 2, 1)  # transaction 2's change to b is not written yet
    connector.boundary("END", 2, {"public.a": 1, "public.b": 1})

    log = tmp_path / "zync-run.log"
    run = RunProcess(project, log)
    try:
        deadline = time.monotonic() + 240
        while not (pooled("a") == 2 and state() == ([1], [1])):
            assert run.process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the zync run process never took a's change:\n" + log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        run.kill()  # between the transaction's topics: a's change in the pool, b's not on the broker yet
    assert state() == ([1], [1])  # the cut before transaction 2: its change to a shows nowhere

    connector.send_change("b", 2, 2, 2)
    connector.boundary("BEGIN", 3)
    connector.send_change("a", 3, 3, 1)
    connector.send_change("b", 3, 3, 2)
    connector.boundary("END", 3, {"public.a": 1, "public.b": 1})
    whole = [([1], [1]), ([1, 2], [1, 2]), ([1, 2, 3], [1, 2, 3])]
    seen = []
    with Service(target, root=project.path, status=Progress.for_run(live=False)) as service:
        for _ in range(8):
            service.cycle()
            seen.append(state())
            assert seen[-1] in whole, seen  # never one table's change of a transaction without the other's
            if seen[-1] == whole[-1]:
                break
    assert seen[-1] == whole[-1], seen

    # Each record once in the pool (a record taken before the kill is not taken again), and the cut after
    # transaction 3's END (the transaction topic's sixth record), nothing given up on.
    records = spark.sql(f"select kafka.topic, kafka.partition, kafka.offset from {pool} "
                        "where kafka.topic not like 'zync:%'").collect()
    assert len(records) == len(set(records)) == 2 * 3 + 3 * 2, records
    (cut,) = spark.table(cut_table_name(pool)).collect()
    assert (cut["end_offset"], cut["expired"]) == (5, 0)
    assert cut["transaction"] == transaction_key(debezium.transaction_id(3, 300))
