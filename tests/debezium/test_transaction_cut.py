"""A raw pool keeps a real Debezium connector's cut: the newest source transaction up to which every
transaction has all of its changes in the pool, and each data topic's last offset at or before it.

PostgreSQL -> Debezium's source (provide.transaction.metadata) -> Kafka -> the pool. A transaction
over two tables read half (one table's topic not taken yet) leaves the cut where it was; read
whole, the cut takes it; a restart in between resumes the cut from the pool and goes on. Changes and
ENDs Debezium sends again of transactions already behind the cut, after a restart or within a run, hold it not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from ingest.pool import PoolIngest
from ingest.table import RawTable
from zync import kafka_client
from zync.settled_reads import newest_settled_cut
from zync.tables import raw_table_name
from zync.transactions import CUT_TAG, Cut, cut_topic, transaction_key

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
        assert (row["connector"], row["end_offset"]) == (TRANSACTIONS, 3)
        assert row["offsets"] == {ORDERS: {0: 1}, LINES: {0: 3}}
        ends = spark.sql(f"select value.id, value.ts_ms from zync.{raw_table_name(TRANSACTIONS)} "
                         "where value.status = 'END' order by kafka.offset").collect()
        assert (whole.transaction, whole.committed_ms) == (transaction_key(ends[-1]["id"]), ends[-1]["ts_ms"])
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
    # The cut rides in the pool's own commits: each commit that moved it holds a row of it, equal to the
    # tag of that commit; the rows are the cut's history (the snapshot's, the two whole transactions', the
    # third's), and the cut view shows the newest.
    history = spark.sql(f"select kafka.offset, value, _metadata.file_path as file from {POOL} "
                        f"where kafka.topic = '{cut_topic(TRANSACTIONS)}' order by kafka.offset").collect()
    cuts = [Cut.from_dict(json.loads(r["value"])) for r in history]
    assert [r["offset"] for r in history] == list(range(len(history)))
    assert [c.end_offset for c in cuts] == [-1, 3, 5] and cuts[0] == half and cuts[1] == whole and cuts[-1] == last
    for r in history:
        (tag,) = [json.loads(t)[TRANSACTIONS] for t in _file_tags(spark, r["file"])]
        assert Cut.from_dict(tag) == Cut.from_dict(json.loads(r["value"]))
    (row,) = spark.table(f"{POOL}__cut").collect()
    assert row["end_offset"] == 5 and row["offsets"] == {ORDERS: {0: 2}, LINES: {0: last.offsets[(LINES, 0)]}}

    # Debezium sends at least once: a task that dies before its offsets are flushed sends again, at new offsets
    # past the cut, what followed them (debezium.replay: its own records, byte for byte). A restart (the cut
    # from its row), then the third transaction sent again in part, with its END: its order, not its lines.
    debezium.replay(ORDERS, last.offsets[(ORDERS, 0)])
    debezium.replay(TRANSACTIONS, last.end_offset)
    lines_before = debezium.count(LINES)
    debezium.psql("begin; insert into lines values (6, 2, 7); update orders set total = 12 where id = 2; commit;",
                  database)
    debezium.wait_records(TRANSACTIONS, 9)
    debezium.wait_records(LINES, lines_before + 1)
    third = _pool(target, spark)
    try:
        _run(third, target, {ORDERS, LINES, TRANSACTIONS})
        _assert_every_record_behind_the_cut(spark, debezium)
        # Within the same run: the fourth transaction's line sent again (its END is behind the cut, not sent
        # again), then a fifth transaction.
        debezium.replay(LINES, lines_before)
        debezium.psql("begin; insert into orders values (4, 40); insert into lines values (7, 4, 40); commit;",
                      database)
        debezium.wait_records(TRANSACTIONS, 11)
        debezium.wait_records(LINES, lines_before + 3)
        _run(third, target, {ORDERS, LINES, TRANSACTIONS})
        _assert_every_record_behind_the_cut(spark, debezium)
    finally:
        third.close()


def _assert_every_record_behind_the_cut(spark, debezium) -> None:
    """The cut is at the transaction topic's last END and every data record Kafka holds is behind it and shown
    (a change sent again holds neither), none given up on."""
    cut, counts = _stored_cut(spark), {t: debezium.count(t) for t in (ORDERS, LINES, TRANSACTIONS)}
    assert (cut.end_offset, cut.expired) == (counts[TRANSACTIONS] - 1, 0)
    assert cut.offsets == {(ORDERS, 0): counts[ORDERS] - 1, (LINES, 0): counts[LINES] - 1}
    for topic in (ORDERS, LINES):
        assert _offsets(spark, view(topic), topic) == list(range(counts[topic]))


def _file_tags(spark, file_path: str) -> list[str]:
    """The cut tags of the pool log's add actions of the data file at `file_path`."""
    location = spark.sql(f"describe detail {POOL}").first()["location"].rstrip("/")
    name = file_path.rstrip("/").rsplit("/", 1)[-1]
    log = Path(location.removeprefix("file:")) / "_delta_log"
    return [add["tags"][CUT_TAG] for commit in sorted(log.glob("*.json"))
            for add in (json.loads(line).get("add") for line in commit.read_text().splitlines())
            if add and add["path"].rsplit("/", 1)[-1] == name and CUT_TAG in (add.get("tags") or {})]


RUN_PREFIX = "txrun"
RUN_MIRRORS = r"""
mirrors:
  - topics: 'txrun\.public\..*'
    name: 'txrun_{table}'
    pool: raw_txrun
    consistency: transaction
"""


def _state(spark) -> tuple[dict[int, int], dict[int, list[int]]]:
    """(order id -> total, order id -> its lines' quantities) as the two mirrors show them, read one after the other."""
    orders = {r["id"]: r["total"] for r in spark.sql("select id, total from zync.txrun_orders").collect()}
    lines: dict[int, list[int]] = {}
    for r in spark.sql("select order_id, qty from zync.txrun_lines order by id").collect():
        lines.setdefault(r["order_id"], []).append(r["qty"])
    return orders, lines


def test_zync_run_shows_every_mirror_of_a_connector_at_the_same_whole_transaction(debezium, target, spark, tmp_path,
                                                                                     monkeypatch):
    from service import etl_status
    from service.run import Service
    from testkit.invoices import ROOT
    from testkit.scratch import make_scratch_project
    from tests.service.test_whole_database import cycles_until
    from zync.progress import Progress

    database = debezium.database("txrun")
    debezium.psql("create table orders (id int primary key, total int);"
                  "create table lines (id int primary key, order_id int, qty int);"
                  "insert into orders values (1, 10); insert into lines values (1, 1, 10);", database)
    debezium.source("txrun", database, ["public.orders", "public.lines"], RUN_PREFIX,
                    **{"provide.transaction.metadata": "true"})
    debezium.wait_records(f"{RUN_PREFIX}.public.lines", 1)
    project = make_scratch_project(tmp_path / "txrun", {"db.yml": RUN_MIRRORS}, spark=spark,
                                   topics=lambda: kafka_client.topic_names(target))
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    # Every cycle settles the cut (folds the connector's mirrors together to it): a short --settle-every.
    with Service(target, root=project.path, status=Progress.for_run(live=False), settle_every=0.01) as service:
        service.discovery.every_s = 0
        cycles_until(service, lambda: spark.catalog.tableExists("zync.txrun_lines")
                     and _state(spark) == ({1: 10}, {1: [10]}), most=10)
        # Transactions over both tables, each read at every cycle: an order shows with all its lines or not at all.
        debezium.psql("begin; insert into orders values (2, 20); insert into lines values (2, 2, 5), (3, 2, 15); commit;"
                      "begin; update orders set total = 21 where id = 2; insert into lines values (4, 2, 1); commit;"
                      "begin; delete from lines where id = 1; delete from orders where id = 1; commit;",
                      database)
        seen, settled = [], []
        passed = [({1: 10}, {1: [10]}), ({1: 10, 2: 20}, {1: [10], 2: [5, 15]}),
                  ({1: 10, 2: 21}, {1: [10], 2: [5, 15, 1]}), ({2: 21}, {2: [5, 15, 1]})]
        for _ in range(12):
            service.cycle()
            orders, lines = _state(spark)
            seen.append((orders, lines))
            settled.append(_settled_state(spark))
            assert (orders, lines) in passed, seen
            # The bases at the settled cut: a state the source passed through too, never half a transaction.
            assert settled[-1] in passed or settled[-1] is None, (settled, service.settled.lagging)
            if orders == {2: 21} and settled[-1] == (orders, lines):
                break
        assert _state(spark) == ({2: 21}, {2: [5, 15, 1]})
        assert settled[-1] == _state(spark), (settled, service.settled.lagging)
        # zync_settled_cut reads the same, from the bases alone.
        (compiled,) = project.dbt("compile", "--inline", SETTLED_READ).results
        assert "version as of" in compiled.node.compiled_code and "raw_txrun" not in compiled.node.compiled_code
        assert _rows_state(spark.sql(compiled.node.compiled_code)) == _state(spark)
        connector = f"{RUN_PREFIX}.transaction"
        # So does a reader without Spark: delta-rs over each base at the version recorded for the cut.
        at = newest_settled_cut(spark.conf.get("spark.sql.warehouse.dir"), "zync", "raw_txrun", connector)
        assert set(at.versions) == {"zync.txrun_orders", "zync.txrun_lines"}
        assert _rows_state(pa.table(at.query(BOTH_ROWS.format(orders="txrun_orders", lines="txrun_lines"))).to_pylist()) \
            == _state(spark)
        assert service.metrics.cut_waiting.labels(connector)._value.get() == 0
        committed_s = service.metrics.cut_committed.labels(connector)._value.get()
    (row,) = spark.table("zync.raw_txrun__cut").collect()
    assert row["connector"] == connector and row["expired"] == 0
    assert round(row["committed_at"].timestamp(), 3) == round(committed_s, 3)
    # `zync etl status` says where each mirror's connector's cut stands.
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(project.path))
    statuses = {s.model: s for s in etl_status.collect(target, [project.path / "transforms" / "db.yml"])}
    assert f"after transaction {row['transaction']}" in statuses["txrun_orders"].cut
    assert f"its base settled at transaction {row['transaction']}," in statuses["txrun_orders"].cut
    assert "stops at the cut of txrun.transaction" in etl_status.render(list(statuses.values()))

    # `zync from-kafka` of the connector's topics takes its transaction topic along and moves the cut too.
    debezium.psql("begin; insert into orders values (3, 30); insert into lines values (5, 3, 3); commit;", database)
    debezium.wait_records(connector, 8)
    debezium.wait_records(f"{RUN_PREFIX}.public.lines", 7)
    from cli import main as cli

    assert cli.main(["from-kafka", "--topic", f"{RUN_PREFIX}.public.orders", "--topic", f"{RUN_PREFIX}.public.lines",
                     "--exit-after", "0"]) == 0
    assert _state(spark) == ({2: 21, 3: 30}, {2: [5, 15, 1], 3: [3]})

    # Every past cut: both mirrors as they stood at it (zync_mirror_at_cut) are a state the source passed
    # through (or nothing, before the snapshot is whole), in the source's order, the newest cut the last state.
    states = [({}, {}), ({1: 10}, {1: [10]}), ({1: 10, 2: 20}, {1: [10], 2: [5, 15]}),
              ({1: 10, 2: 21}, {1: [10], 2: [5, 15, 1]}), ({2: 21}, {2: [5, 15, 1]}),
              ({2: 21, 3: 30}, {2: [5, 15, 1], 3: [3]})]
    cuts = spark.sql(f"select position, committed_at from zync.raw_txrun__cuts where connector = '{connector}' "
                     "order by position").collect()
    assert [c["position"] for c in cuts] == list(range(len(cuts))) and len(cuts) >= 3
    at_cuts = [_state_at(project, spark, cut=c["position"]) for c in cuts]
    found = [states.index(state) for state in at_cuts]  # a state not in the list fails here
    assert found == sorted(found) and found[-1] == len(states) - 1, at_cuts
    newest = cuts[-1]["committed_at"].strftime("%Y-%m-%d %H:%M:%S.%f")
    assert _state_at(project, spark, at=f"timestamp'{newest}'") == states[-1]




def _settled_state(spark) -> tuple[dict[int, int], dict[int, list[int]]] | None:
    """_state's two mirrors at the newest settled cut: each base as of the version recorded for it (None: none yet)."""
    if not spark.catalog.tableExists("zync.raw_txrun__settled"):
        return None
    newest = spark.sql("select versions from zync.raw_txrun__settled order by end_offset desc limit 1").first()
    if newest is None:
        return None
    versions = newest["versions"]
    return _rows_state(spark.sql(BOTH_ROWS.format(
        orders=f"zync.txrun_orders__base version as of {versions['zync.txrun_orders']}",
        lines=f"zync.txrun_lines__base version as of {versions['zync.txrun_lines']}")))


# Both mirrors' rows in one read: orders (id, total) and lines (order id, qty; by line id).
BOTH_ROWS = ("select 'order' as side, id, total as value, 0 as line from {orders} "
                "union all select 'line', order_id, qty, id from {lines}")
SETTLED_READ = ("{%- set at = zync_settled_cut('txrun.transaction') %}"
                + BOTH_ROWS.format(orders="{{ at['txrun_orders'] }}", lines="{{ at['txrun_lines'] }}"))


def _rows_state(rows) -> tuple[dict[int, int], dict[int, list[int]]]:
    """_state from BOTH_ROWS' rows: a Spark frame, or a list of dicts."""
    orders: dict[int, int] = {}
    lines: dict[int, list[int]] = {}
    rows = rows.collect() if hasattr(rows, "collect") else rows
    for r in sorted(rows, key=lambda r: (r["side"], r["line"])):
        if r["side"] == "order":
            orders[r["id"]] = r["value"]
        else:
            lines.setdefault(r["id"], []).append(r["value"])
    return orders, lines


def _state_at(project, spark, **cut) -> tuple[dict[int, int], dict[int, list[int]]]:
    """_state's two mirrors as they stood at one past cut: zync_mirror_at_cut, compiled by dbt and run."""
    arguments = ", ".join(f"{name}={value!r}" for name, value in cut.items())
    sql = (f"with orders as ({{{{ zync_mirror_at_cut('txrun_orders', {arguments}) }}}}), "
           f"lines as ({{{{ zync_mirror_at_cut('txrun_lines', {arguments}) }}}}) "
           + BOTH_ROWS.format(orders="orders", lines="lines"))
    (result,) = project.dbt("compile", "--inline", sql).results
    return _rows_state(spark.sql(result.node.compiled_code))
