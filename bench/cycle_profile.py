"""Where a busy `zync run` cycle's time goes, measured in-process.

    .venv/bin/python bench/cycle_profile.py [--cycles 6] [--events 300] [--explain] [--s3] [--keep]

One command, alone on the machine (its own state folder and ports). It builds
the invoices project (bench/latency.py's stream shape), starts the service
in this process, and for each cycle produces --events Debezium events, then
runs one `Service.cycle()`: every stage's time, and every Spark SQL
statement's (its first 100 characters, seconds), are printed; the slowest
statements summed over the cycles last. The first cycle (JVM warm-up, the
project's parse, the tables' creation) is reported apart.

--s3 keeps the project's tables on an S3 server it starts (`zync up --s3`, S3Proxy
over a folder of the state folder, loopback; docs/object-storage.md), in a database
of their own (zync_s3): each cycle then also prints the requests the engine's S3A
client made (its IOStatistics counters: HEAD, LIST, GET, PUT, DELETE, COPY ...), the
Python side's (Arrow's S3 client) not counted.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.latency import Producer  # noqa: E402  (it sets the latency benchmark's ports: ours below)
from bench.service_cycles import full_cycle, invoices_service, produce_rounds  # noqa: E402
from testkit.invoices import invoices_project  # noqa: E402
from zync.spark_internals import java_array, java_context, jvm_of  # noqa: E402

STATE = ROOT / ".local" / "bench-cycle-state"
PORTS = {"ZYNC_KAFKA_PORT": "24392", "ZYNC_REGISTRY_PORT": "24381", "ZYNC_CATALOG_PORT": "24727",
         "ZYNC_S3_PORT": "24391"}
os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local"})
OUT = ROOT / "bench" / "out"


class StatementClock:
    """Times every SparkSession.sql call of this process (dbt-spark's session method goes through it)."""

    def __init__(self, explain_to: Path | None = None, stages: bool = True):
        from pyspark.sql import SparkSession

        self.stages = stages  # reading the status store costs each statement ~0.1 s, growing with the stages run
        self.explain_to = explain_to  # where each output INSERT's text and physical plan go (numbered)
        self.explained = 0

        self.calls: list[tuple[str, float, str]] = []
        original = SparkSession.sql

        def timed(session, query, *args, **kwargs):
            if self.explain_to and str(query).lstrip().startswith("/*") and "insert into" in str(query)[:1000]:
                # EXPLAIN of an INSERT shows the write node alone: explain the query it writes
                select = re.sub(r"^(/\*.*?\*/)?\s*insert into \S+", "", str(query), count=1, flags=re.S)
                planning = time.perf_counter()
                plan = original(session, "explain " + select).first()[0]
                print(f"    (planning the INSERT's query, by EXPLAIN: {time.perf_counter() - planning:.2f} s)")
                self.explained += 1
                path = self.explain_to.with_name(f"{self.explain_to.stem}_{self.explained}{self.explain_to.suffix}")
                path.write_text(str(query) + "\n\n" + plan)
            first_stage = self._stages(session) if self.stages else None
            started = time.perf_counter()
            try:
                return original(session, query, *args, **kwargs)
            finally:
                seconds = time.perf_counter() - started
                text = " ".join(str(query).split())
                text = text[text.find("*/") + 3:] if text.startswith("/*") else text
                self.calls.append((text[:100], seconds, self._stage_summary(session, first_stage) if self.stages else ""))

        SparkSession.sql = timed

    @staticmethod
    def _stage_list(session):
        """Every stage Spark's status store knows (the store is there with the UI off too)."""
        no_quantiles = java_array(session, jvm_of(session).double, 0)
        return java_context(session).sc().statusStore().stageList(None, False, False, no_quantiles, None)

    def _stages(self, session) -> int:
        """The highest stage id so far (-1: none)."""
        stages = self._stage_list(session)
        return max((stages.apply(i).stageId() for i in range(stages.size())), default=-1)

    def _stage_summary(self, session, since: int) -> str:
        """Stages run by the statement: how many, and the durations of the longest (ms, task count)."""
        stages = self._stage_list(session)
        found = []
        for i in range(stages.size()):
            stage = stages.apply(i)
            if stage.stageId() <= since:
                continue
            submitted, completed = stage.submissionTime(), stage.completionTime()
            if submitted.isDefined() and completed.isDefined():
                found.append((completed.get().getTime() - submitted.get().getTime(), stage.numTasks()))
        found.sort(reverse=True)
        return (f"{len(found)} stages, {sum(ms for ms, _ in found)} ms: "
                + " ".join(f"{ms}ms/{tasks}t" for ms, tasks in found[:8]))

    def take(self) -> list[tuple[str, float]]:
        calls, self.calls = self.calls, []
        return calls


class S3Requests:
    """The S3 requests the engine's S3A client for a bucket made, from its IOStatistics counters."""

    def __init__(self, spark, bucket: str):
        jvm = jvm_of(spark)
        conf = java_context(spark).hadoopConfiguration()
        self.fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(f"s3a://{bucket}/"), conf)
        self.before = self.counters()

    def counters(self) -> dict[str, int]:
        counters = self.fs.getIOStatistics().counters()
        return {str(k): int(counters.get(k)) for k in counters.keySet()}

    def take(self) -> dict[str, int]:
        """The requests (counters named object_*, op_*, store_io_request ...) since the last call, non-zero."""
        now = self.counters()
        delta = {k: v - self.before.get(k, 0) for k, v in now.items()}
        self.before = now
        return {k: v for k, v in sorted(delta.items())
                if v and (k.startswith(("object_", "op_", "store_io", "action_http")) and not k.endswith((".failures", "_duration")))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=6, help="warm cycles after the first (default 6)")
    parser.add_argument("--events", type=int, default=300, help="events produced before each cycle")
    parser.add_argument("--explain", action="store_true",
                        help="write each output INSERT and its physical plan to bench/out/cycle_profile_insert_N.txt")
    parser.add_argument("--no-stages", action="store_true",
                        help="do not read each statement's Spark stages (the status store's reads cost time that grows "
                             "with the stages run: leave them out when the cycle's time is the figure)")
    parser.add_argument("--s3", action="store_true",
                        help="the project's tables on an S3 server it starts; the engine's S3 requests per cycle")
    parser.add_argument("--keep", action="store_true", help="keep the services and state afterwards")
    parser.add_argument("--python-profile", action="store_true",
                        help="also profile the warm cycles' Python (cProfile): the functions with the most "
                             "cumulative time, printed at the end; the whole profile in bench/out/cycle_profile.pstats")
    args = parser.parse_args()

    OUT.mkdir(parents=True, exist_ok=True)
    from stack import services
    from zync.config import load_target

    if args.s3:  # before the target is read: its warehouse and schema come from these
        from stack import s3

        os.environ.update({**s3.environment(), "ZYNC_SCHEMA": "zync_s3"})
    target = load_target("local")
    services.down(target)
    shutil.rmtree(STATE, ignore_errors=True)
    services.up(target, object_store=args.s3)
    project = invoices_project(STATE / "projects", "Prof")
    os.environ["ZYNC_PROJECT_DIR"] = str(project.path)
    os.chdir(project.path)
    python_profile = cProfile.Profile() if args.python_profile else None
    node_profile = cProfile.Profile() if args.python_profile else None
    if node_profile:
        # dbt runs each model in a worker thread, which the main thread's profile does not see
        from dbt.task.runnable import GraphRunnableTask

        call_runner = GraphRunnableTask.call_runner

        def profiled_call_runner(task, runner):
            node_profile.enable()
            try:
                return call_runner(task, runner)
            finally:
                node_profile.disable()

        GraphRunnableTask.call_runner = profiled_call_runner
    clock = StatementClock(OUT / "cycle_profile_insert.txt" if args.explain else None, stages=not args.no_stages)
    producer = Producer(target, project)
    invoice = 0
    cycles = []
    requests = None
    try:
        with invoices_service(target, project) as service:
            for n in range(args.cycles + 1):
                sent, invoice = produce_rounds(producer, args.events, invoice)
                started = time.perf_counter()
                if python_profile and n > 0:
                    python_profile.enable()
                reports = full_cycle(service)
                if python_profile:
                    python_profile.disable()
                total = time.perf_counter() - started
                calls = clock.take()
                if args.s3 and requests is None:
                    from pyspark.sql import SparkSession

                    requests = S3Requests(SparkSession.getActiveSession() or SparkSession.builder.getOrCreate(),
                                          s3.BUCKET)
                    made = {}  # the first cycle's: not counted from its start
                else:
                    made = requests.take() if requests else {}
                cycle = {"cycle": n, "seconds": round(total, 2), "events": sent, "s3_requests": made,
                         "stages": [(r.stage, round(r.seconds, 2), r.records) for r in reports],
                         "statements": len(calls), "sql_seconds": round(sum(c[1] for c in calls), 2),
                         "calls": calls}
                cycles.append(cycle)
                print(f"cycle {n}{' (warm-up)' if n == 0 else ''}: {total:.2f} s, {sent} events; "
                      + ", ".join(f"{s} {t:.2f}s/{r}" for s, t, r in cycle["stages"])
                      + f"; {len(calls)} statements, {cycle['sql_seconds']:.2f} s in spark.sql", flush=True)
                if made:
                    print("    S3A: " + ", ".join(f"{k} {v}" for k, v in made.items()))
                for text, seconds, stages in calls:
                    if seconds >= 0.15:
                        print(f"    {seconds:6.2f}  {text}\n            {stages}")
    finally:
        if not args.keep:
            services.down(target)
    totals: dict[str, list[float]] = defaultdict(list)
    for cycle in cycles[1:]:
        for text, seconds, _ in cycle["calls"]:
            totals[text[:60]].append(seconds)
    print("\nstatements over the warm cycles (sum, count, text):")
    for text, times in sorted(totals.items(), key=lambda kv: -sum(kv[1]))[:15]:
        print(f"  {sum(times):7.2f} s  {len(times):4d}x  {text}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cycle_profile.json").write_text(json.dumps(cycles, indent=1))
    if python_profile:
        python_profile.dump_stats(OUT / "cycle_profile.pstats")
        print("\nPython over the warm cycles, by cumulative time (time in spark.sql included):")
        pstats.Stats(python_profile).sort_stats("cumulative").print_stats(45)
        node_profile.dump_stats(OUT / "cycle_profile_nodes.pstats")
        print("\ndbt's model threads (every cycle, the warm-up's included), by cumulative time:")
        pstats.Stats(node_profile).sort_stats("cumulative").print_stats(70)


if __name__ == "__main__":
    main()
