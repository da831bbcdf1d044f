"""A reader never sees half of a source transaction: the torn read shown first, then kept away.

Real PostgreSQL -> two Debezium sources on the same tables -> Kafka -> one `zync run` (this process,
cycling) -> mirrors, while a reader queries them without pause (testkit/torn_reads.py: transfers
between two tables, orders with their lines; every source transaction keeps the invariants). The
`<name>off` connector's topics are mirrored as by default (a raw table per topic, each mirror on its
own); the `<name>on` connector's go to a raw pool with `consistency: transaction` (every mirror at the
connector's cut). The same workload, engine and reader (a session of its own on the engine): with
the cut off the reader meets states the source never had; with it on, none.

Three readers, each on a thread of its own. Two are sessions of their own on the engine: one queries the
mirrors' views, cut off and cut on, in turn; the other the `<name>on` mirrors' bases at the connector's
settled cut (`zync run --settle-every`: each base as of the version recorded for the newest cut they all
hold, service/settled_cuts.py). The third reads the same bases at the same settled cut without Spark, with
delta-rs (zync/settled_reads.py): 33-39 ms a read idle, 0.52 s on average over 10,019 reads with every
reader and `zync run` on two cores (2026-12-07, a 2-core 24 GiB Linux host), the reader that can make
10,000 reads in a campaign. A reader done with its reads stops, leaving the cores to the others.

`make torn-reads` runs it (marker `campaign`): the workload for ZYNC_TORN_SECONDS (120 by default), and
on until ZYNC_TORN_READS reads at the settled cut by delta-rs (10,000 by default), ZYNC_TORN_SPARK_READS
by Spark (20) and ZYNC_TORN_VIEW_READS of the views at the cut (15) were made while it ran; the reads at
the settled cut must have seen it move. `make test` does not: a read of the four mirrors' views at the
cut takes 12-13 s idle and 20-40 s while `zync run` cycles beside it, at the settled cut 1.2-1.5 s and
2.4-3.4 s in Spark (tests/debezium/test_pooled_read_profile.py, 2026-12-06, a 2-core 24 GiB Linux host;
docs/benchmarks.md, "Reading the mirrors at the settled cut").
The suite's check of the same guarantee is tests/debezium/test_transaction_cut.py (every mirror, and
the bases at the settled cut, read after each `zync run` cycle, transactions read half and whole).
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from service.run import Service
from testkit import torn_reads
from testkit.invoices import ROOT
from testkit.scratch import make_scratch_project
from zync import kafka_client
from zync.progress import Progress



# Settled cuts on, a round of folds as often as the cycle allows: how fresh the reads at the settled cut are.
SETTLE_EVERY_S = 5.0


def mirrors(name: str) -> str:
    """Two entries over two connectors' topics: `<name>off` as mirrors are by default (a raw table per
    topic, each mirror on its own), `<name>on` in a pool with the cut."""
    return (f"mirrors:\n  - topics: '{name}off\\.public\\..*'\n    name: '{name}off_{{table}}'\n"
            f"  - topics: '{name}on\\.public\\..*'\n    name: '{name}on_{{table}}'\n    pool: raw_{name}on\n"
            "    consistency: transaction\n")


def _source_state(debezium, database: str) -> tuple[int, dict[int, int]]:
    (row,) = debezium.query("select (select sum(balance) from checking) + (select sum(balance) from savings) as t",
                            database)
    orders = {r["id"]: int(r["total"]) for r in debezium.query("select id, total from orders", database)}
    return int(row["t"]), orders


def _mirror_state(spark, prefix: str) -> tuple[int | None, dict[int, int]]:
    (row,) = spark.sql(f"select (select sum(balance) from zync.{prefix}checking) "
                       f"+ (select sum(balance) from zync.{prefix}savings) as t").collect()
    return row["t"], {r["id"]: r["total"] for r in spark.sql(f"select id, total from zync.{prefix}orders").collect()}


def _whole(spark, prefix: str) -> bool:
    names = [f"zync.{prefix}{t}" for t in ("checking", "savings", "orders", "lines")]
    if not all(spark.catalog.tableExists(n) for n in names):
        return False
    return _mirror_state(spark, prefix)[0] == torn_reads.TOTAL_BALANCE


def sources_and_project(debezium, target, spark, tmp_path, name: str):
    """The workload's database, its two Debezium sources (`<name>off`, `<name>on`) and a project mirroring
    both: (database, {"off"|"on": mirror name prefix}, project)."""
    database = debezium.database(f"dbz_{name}")
    debezium.psql(torn_reads.SCHEMA_SQL, database)
    sets = {s: f"{name}{s}_" for s in ("off", "on")}
    for s, metadata in (("off", "false"), ("on", "true")):
        debezium.source(f"dbz-{name}-{s}", database, torn_reads.TABLES, f"{name}{s}",
                        **{"provide.transaction.metadata": metadata})
        debezium.wait_records(f"{name}{s}.public.lines", 2)
    project = make_scratch_project(tmp_path / name, {"db.yml": mirrors(name)}, spark=spark,
                                   topics=lambda: kafka_client.topic_names(target))
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    return database, sets, project


def torn_reads_while_running(debezium, target, spark, tmp_path, name: str, seconds: float, rate: float,
                             least: dict[str, int]) -> dict[str, torn_reads.Reads]:
    """The workload read by every reader until each reader named in `least` made that many reads while
    the source changed: {"on": views at the cut, "settled": Spark at the settled cut, "delta-rs": ...}."""
    database, sets, project = sources_and_project(debezium, target, spark, tmp_path, name)
    log = Progress.for_run(live=False)
    with Service(target, root=project.path, status=log, fold_after_rows=200, settle_every=SETTLE_EVERY_S) as service:
        service.discovery.every_s = 0
        for _ in range(12):
            service.cycle()
            if all(_whole(spark, prefix) for prefix in sets.values()):
                break
        assert all(_whole(spark, prefix) for prefix in sets.values()), "the snapshot never reached both mirror sets"

        # Three readers: two sessions of their own, the mirrors' views with the cut off and on, and the bases at
        # the connector's settled cut (plain Delta versions, many times faster than the views'); and delta-rs
        # over the same bases at the same cut, without Spark.
        reader = torn_reads.Reader(spark, {s: torn_reads.invariant_query("zync", p) for s, p in sets.items()}).start()
        pool, connector = f"raw_{name}on", f"{name}on.transaction"
        settled_reader = torn_reads.Reader(spark, {"settled": torn_reads.settled_invariant_query(
            "zync", pool, connector, sets["on"])}).start()
        warehouse = spark.conf.get("spark.sql.warehouse.dir")
        delta_rs_reader = torn_reads.Reader(spark, reads={"delta-rs": torn_reads.settled_delta_rs_read(
            warehouse, "zync", pool, connector, sets["on"])}).start()
        readers = (reader, settled_reader, delta_rs_reader)
        failed: list[Exception] = []

        enough = threading.Event()  # the reads asked for were made while the source changed

        def workload() -> None:
            try:
                debezium.psql(f"call workload({seconds}, {rate}, 0.42)", database)
                rounds = 0
                while not enough.is_set() and not failed:  # on, half a minute at a time, until then
                    rounds += 1
                    debezium.psql(f"call workload(30, {rate}, {0.42 + rounds / 1e4})", database)
            except Exception as e:  # said by the test's thread
                failed.append(e)

        writer = threading.Thread(target=workload, daemon=True)
        writer.start()
        started = said = time.monotonic()
        # Spark's reads take up to a minute each beside everything else on two cores, delta-rs's up to a second.
        deadline = (time.monotonic() + seconds + 600 + 60 * max(least.get("on", 0), least.get("settled", 0))
                    + least.get("delta-rs", 0))
        while writer.is_alive() and time.monotonic() < deadline and not failed:
            service.cycle()
            # reads count while the source changes, so that the cut moves under them
            reads = {n: r for each in readers for n, r in each.reads.items()}
            for r in reads.values():
                r.while_writing = r.reads
            for each in readers:  # a reader done with its reads leaves the cores to the others
                if all(reads[n].while_writing >= least.get(n, 0) for n in each.reads):
                    each.halt()
            if all(reads[n].while_writing >= count for n, count in least.items()):
                enough.set()
            if time.monotonic() > said + 15:
                said = time.monotonic()
                print(f"{said - started:.0f} s: " + _report(reads), *(r.errors[-1:] for r in readers), flush=True)
        enough.set()
        writer.join()  # its last half minute of changes done: the state the mirrors must end at is final
        assert not failed, failed
        # Every change through: the mirrors end where the source database ends.
        expected = _source_state(debezium, database)
        for _ in range(20):
            if all(_mirror_state(spark, p) == expected for p in sets.values()):
                break
            service.cycle()
        reads = {n: r for each in readers for n, r in each.stop().items()}
    for each in readers:
        assert not each.errors, each.errors[:5]
    for prefix in sets.values():
        assert _mirror_state(spark, prefix) == expected, prefix
    return reads


def _report(reads: dict[str, torn_reads.Reads]) -> str:
    names = {"off": "views, cut off", "on": "views, cut on", "settled": "settled cut, Spark",
             "delta-rs": "settled cut, delta-rs"}
    return "; ".join(f"{names[s]}: {r.reads} reads ({r.seconds:.0f} s), "
                     f"{r.torn} torn {r.examples}, {r.while_writing} while the source changed"
                     + (f", {len(r.cuts)} cuts" if r.cuts else "") for s, r in reads.items())


@pytest.mark.campaign
def test_torn_reads_campaign(debezium, target, spark, tmp_path):
    least = {"delta-rs": int(os.environ.get("ZYNC_TORN_READS", "10000")),
             "settled": int(os.environ.get("ZYNC_TORN_SPARK_READS", "20")),
             "on": int(os.environ.get("ZYNC_TORN_VIEW_READS", "15"))}
    seconds = float(os.environ.get("ZYNC_TORN_SECONDS", "120"))
    reads = torn_reads_while_running(debezium, target, spark, tmp_path, "torncampaign", seconds=seconds, rate=100,
                                     least=least)
    print(_report(reads))
    for settled in ("delta-rs", "settled"):
        assert reads[settled].while_writing >= least[settled] and reads[settled].torn == 0, _report(reads)
        assert len(reads[settled].cuts) > 1, _report(reads)  # the settled cut moved while it was read
    assert reads["on"].while_writing >= least["on"] and reads["on"].torn == 0, _report(reads)
    assert reads["off"].torn > 0, _report(reads)
