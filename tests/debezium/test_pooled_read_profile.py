"""Profile of a read of four pooled mirrors at the transaction cut (testkit/torn_reads.py's query), idle
and with `zync run` cycling beside it: per read, the time in analysis, optimization (Delta's file
listing and data skipping among its rules), physical planning and execution, the Spark jobs, tasks and
SQL executions it started, the scans it ran and the files and rows they read; then the optimizer's
rules by time. Marker `campaign` (a measurement, not a check):

    pytest -m campaign -s tests/debezium/test_pooled_read_profile.py   # ZYNC_PROFILE_OUT=FILE also writes it there

The workload (transfers, orders with lines) runs ZYNC_PROFILE_SECONDS (60) with `zync run` cycling, then
five reads idle, then reads while a second workload of 60 s runs with `zync run` cycling; each read of the
mirrors' views is followed by one of the same four mirrors at the connector's settled cut (each base as of
the version `zync run` recorded for it), in Spark, then by delta-rs without Spark (zync/settled_reads.py:
DELTA_RS_READS reads, each timed from the settled table's read to the result).
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from service.run import Service
from testkit import torn_reads
from tests.debezium.test_torn_reads import SETTLE_EVERY_S, _whole, sources_and_project
from zync.progress import Progress
from zync.spark_internals import java_frame, java_session, jvm_of

OUT = os.environ.get("ZYNC_PROFILE_OUT", "")
DELTA_RS_READS = 20  # a round's reads at the settled cut with delta-rs: milliseconds each


def timed_reads(read, label: str, count: int) -> dict:
    """`count` reads without Spark (torn_reads.settled_delta_rs_read): each one's seconds."""
    seconds = []
    for _ in range(count):
        started = time.monotonic()
        row = read()
        seconds.append(round(time.monotonic() - started, 4))
        assert row is not None and row["torn_orders"] == 0 and row["balance_total"] == torn_reads.TOTAL_BALANCE, row
    ordered = sorted(seconds)
    return {"label": label, "reads": count, "total": ordered[len(ordered) // 2], "min": ordered[0],
            "max": ordered[-1], "seconds": seconds}


def profile(spark, sql: str, label: str) -> dict:
    store = java_session(spark).sharedState().statusStore()
    before = max([e.executionId() for e in _list(store.executionsList())] or [-1])
    group = f"profile-{label}-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, group)
    t0 = time.monotonic()
    df = spark.sql(sql)
    t1 = time.monotonic()
    qe = java_frame(df).queryExecution()
    qe.optimizedPlan()
    t2 = time.monotonic()
    qe.executedPlan()
    t3 = time.monotonic()
    df.collect()
    t4 = time.monotonic()
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    tasks = 0
    for j in jobs:
        info = tracker.getJobInfo(j)
        for s in (info.stageIds if info else []):
            st = tracker.getStageInfo(s)
            tasks += st.numTasks if st else 0
    files = rows = 0
    scans = 0
    executions = [e for e in _list(store.executionsList()) if e.executionId() > before]
    for e in executions:
        values = {t._1(): t._2() for t in _list(store.executionMetrics(e.executionId()))}
        graph = store.planGraph(e.executionId())
        for node in _list(graph.allNodes()):
            if not node.name().startswith("Scan"):
                continue
            scans += 1
            for m in _list(node.metrics()):
                text = values.get(m.accumulatorId())
                if text is None:
                    continue
                if m.name() == "number of files read":
                    files += _num(text)
                elif m.name() == "number of output rows":
                    rows += _num(text)
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return {"label": label, "analysis": round(t1 - t0, 3), "optimize": round(t2 - t1, 3),
            "plan": round(t3 - t2, 3), "execute": round(t4 - t3, 3), "total": round(t4 - t0, 3),
            "phases": str(qe.tracker().phases()), "jobs": len(jobs), "tasks": tasks,
            "executions": len(executions), "scans": scans, "files": files, "rows_scanned": rows}


def _list(scala):
    it = scala.iterator() if hasattr(scala, "iterator") else scala
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def _num(text) -> int:
    text = str(text).replace(",", "")
    digits = "".join(c for c in text.split("(")[0] if c.isdigit())
    if "total" in text and "(" in text:  # "total (min, med, max ...)\nN (..)"
        parts = text.split("\n")
        digits = "".join(c for c in parts[-1].split("(")[0] if c.isdigit()) if len(parts) > 1 else digits
    return int(digits or 0)


@pytest.mark.campaign
def test_profile_pooled_read(debezium, target, spark, tmp_path):
    name = "prof"
    database, sets, project = sources_and_project(debezium, target, spark, tmp_path, name)
    log = Progress.for_run(live=False)
    results = []
    query = torn_reads.invariant_query("zync", sets["on"])
    reader = spark.newSession()
    with open(OUT or os.devnull, "w") as out:
        def say(*a):
            print(*a, flush=True)
            print(*a, file=out, flush=True)
        with Service(target, root=project.path, status=log, fold_after_rows=200, settle_every=SETTLE_EVERY_S) as service:
            service.discovery.every_s = 0
            for _ in range(12):
                service.cycle()
                if all(_whole(spark, p) for p in sets.values()):
                    break
            # some history: the workload with cycles for a while
            seconds = float(os.environ.get("ZYNC_PROFILE_SECONDS", "60"))
            writer = threading.Thread(target=lambda: debezium.psql(f"call workload({seconds}, 100, 0.42)", database),
                                      daemon=True)
            writer.start()
            while writer.is_alive():
                for r in service.cycle():
                    if r.stage == "dbt":
                        say("cycle dbt", round(r.seconds, 2), r.detail)
            for _ in range(3):
                service.cycle()
            say("deferred", sorted(service.deferred))
            for t in ("checking", "savings", "orders", "lines"):
                base = f"zync.profon_{t}__base"
                say(base, spark.catalog.tableExists(base))
            say(spark.sql("select kafka.topic, count(*) n from zync.raw_profon group by 1").collect())
            df = reader.sql(query)
            say(java_frame(df).queryExecution().toString())
            jvm = jvm_of(spark)
            jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.resetMetrics()
            settled = torn_reads.settled_invariant_query("zync", f"raw_{name}on", f"{name}on.transaction", sets["on"])
            delta_rs = torn_reads.settled_delta_rs_read(spark.conf.get("spark.sql.warehouse.dir"), "zync",
                                                        f"raw_{name}on", f"{name}on.transaction", sets["on"])
            # The settled read also by a session with adaptive execution off (its jobs), and without whole-stage
            # code generation too (its compile time): a reader's own settings.
            plain = reader.newSession()
            plain.conf.set("spark.sql.adaptive.enabled", "false")
            interpreted = plain.newSession()
            interpreted.conf.set("spark.sql.adaptive.enabled", "false")
            interpreted.conf.set("spark.sql.codegen.wholeStage", "false")
            for i in range(5):  # the views and the bases at the settled cut, alternating
                for label, session, sql in ((f"idle-{i}", reader, query), (f"idle-settled-{i}", reader, settled(reader)),
                                            (f"idle-settled-no-aqe-{i}", plain, settled(plain)),
                                            (f"idle-settled-interpreted-{i}", interpreted, settled(interpreted))):
                    r = profile(session, sql, label)
                    results.append(r)
                    say(json.dumps(r))
                r = timed_reads(delta_rs, f"idle-delta-rs-{i}", DELTA_RS_READS)
                results.append(r)
                say(json.dumps(r))
            say(jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.dumpTimeSpent())
            # with `zync run` cycling beside and the workload on
            debezium.psql("begin; delete from lines where id >= 3; delete from orders where id >= 2; commit;", database)
            writer = threading.Thread(target=lambda: debezium.psql("call workload(60, 100, 0.43)", database),
                                      daemon=True)
            writer.start()
            stop = threading.Event()

            def read_loop():
                i = 0
                while not stop.is_set():
                    for label, sql in ((f"busy-{i}", query), (f"busy-settled-{i}", settled(reader))):
                        r = profile(reader, sql, label)
                        results.append(r)
                        say(json.dumps(r))
                    r = timed_reads(delta_rs, f"busy-delta-rs-{i}", DELTA_RS_READS)
                    results.append(r)
                    say(json.dumps(r))
                    i += 1
            t = threading.Thread(target=read_loop, daemon=True)
            t.start()
            while writer.is_alive():
                for r in service.cycle():
                    if r.stage == "dbt":
                        say("busy cycle dbt", round(r.seconds, 2), r.detail)
            stop.set()
            t.join(120)
