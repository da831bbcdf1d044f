"""Scratch probe: where a small writing run's time goes (event log + codegen metrics), alternating settings.

    .venv/bin/python bench/cycle_probe.py --cycles 6 --events 4 [--alt 'k=v,k2=v2' ...]

Each warm cycle runs with the next --alt set (round robin; '' = none) applied
to the dbt stage only. Per statement >= 0.15 s: seconds, codegen compiles
(count, ms) during it, and from Spark's event log: jobs, stages, tasks, the
span covered by jobs, and task time sums.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import bench.cycle_profile as cp  # noqa: E402  (sets ports and state)
from bench.latency import Producer  # noqa: E402
from bench.service_cycles import full_cycle, invoices_service, produce_rounds  # noqa: E402
from testkit.invoices import invoices_project  # noqa: E402
from zync.spark import session_conf  # noqa: E402
from zync.spark_internals import jvm_of  # noqa: E402

EVENTS_DIR = cp.STATE.parent / "probe-events"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--events", type=int, default=4)
    parser.add_argument("--alt", action="append", default=None)
    parser.add_argument("--no-eventlog", action="store_true")
    parser.add_argument("--show", type=float, default=0.15)
    parser.add_argument("--jobs", action="store_true", help="with the event log: each statement's jobs")
    parser.add_argument("--rules", type=int, default=0, help="print the optimizer's first N lines of time per rule")
    parser.add_argument("--history", type=int, default=0, help="events before the warm-up cycle")
    args = parser.parse_args()
    alts = args.alt or [""]
    shutil.rmtree(EVENTS_DIR, ignore_errors=True)
    EVENTS_DIR.mkdir(parents=True)
    submit = []
    if not args.no_eventlog:
        submit += ["--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{EVENTS_DIR}"]
    os.environ["PYSPARK_SUBMIT_ARGS"] = " ".join(submit + ["pyspark-shell"])

    from stack import services
    from zync.config import load_target
    import service.run as run_module

    target = load_target("local")
    services.down(target)
    shutil.rmtree(cp.STATE, ignore_errors=True)
    services.up(target)
    project = invoices_project(cp.STATE / "projects", "Prof")
    os.environ["ZYNC_PROJECT_DIR"] = str(project.path)
    os.chdir(project.path)

    from pyspark.sql import SparkSession

    calls = []
    original = SparkSession.sql
    state = {"cg": None}

    def codegen():
        m = state["cg"]
        h = m.METRIC_COMPILATION_TIME()
        return h.getCount(), 0

    def timed(session, query, *a, **k):
        if state.get("eager") and str(query).startswith("cache lazy table "):
            query = "cache table " + str(query)[len("cache lazy table "):]
        if state["cg"] is None:
            state["cg"] = jvm_of(session).org.apache.spark.metrics.source.CodegenMetrics
        c0, t0 = codegen()
        start = time.time()
        try:
            return original(session, query, *a, **k)
        finally:
            end = time.time()
            c1, t1 = codegen()
            text = " ".join(str(query).split())
            text = text[text.find("*/") + 3:] if text.startswith("/*") else text
            calls.append({"text": text[:90], "start": start, "end": end, "cg": c1 - c0, "cg_ms": t1 - t0,
                          "alt": state.get("alt")})

    SparkSession.sql = timed

    current_alt = {"conf": {}}
    original_ctx = run_module.without_adaptive_execution

    @contextmanager
    def patched(spark):
        with session_conf(spark, current_alt["conf"]), original_ctx(spark):
            yield

    run_module.without_adaptive_execution = patched
    small_models = run_module.Service.small_models

    def traced(service, due):
        found = small_models(service, due)
        print(f"    small: {sorted(found)} of {sorted(due)} (SMALL_RUN_ROWS {run_module.SMALL_RUN_ROWS})", flush=True)
        return found

    run_module.Service.small_models = traced

    # An alt's `var.NAME=VALUE` items are dbt vars (--vars) of the dbt stage's runs, e.g. var.zync_replay_window=0.
    current_vars: dict = {}
    project_run = run_module.DbtProject.run

    def with_vars(project, names, threads=None, variables=None):
        return project_run(project, names, threads, {**(variables or {}), **current_vars} or None)

    run_module.DbtProject.run = with_vars

    producer = Producer(target, project)
    invoice = 0
    cycles = []
    try:
        with invoices_service(target, project) as service:
            for n in range(args.cycles + 1):
                alt = alts[(n - 1) % len(alts)] if n > 0 else ""
                conf = dict(kv.split("=", 1) for kv in alt.split(",") if kv)
                state["eager"] = conf.pop("eager", "off") == "on"  # the caches as before: eager, then counted
                if "small" in conf:
                    run_module.SMALL_RUN_ROWS = 20_000 if conf.pop("small") == "on" else -1
                current_vars.clear()
                current_vars.update({k[len("var."):]: v for k, v in conf.items() if k.startswith("var.")})
                conf = {k: v for k, v in conf.items() if not k.startswith("var.")}
                current_alt["conf"] = conf
                state["alt"] = alt
                sent, invoice = produce_rounds(producer, args.events if n > 0 else max(args.events, args.history),
                                               invoice)
                first = len(calls)
                rules = jvm_of(service.spark).org.apache.spark.sql.catalyst.rules.RuleExecutor
                rules.resetMetrics()
                started = time.perf_counter()
                reports = full_cycle(service)
                total = time.perf_counter() - started
                if args.rules:
                    print("\n".join(rules.dumpTimeSpent().splitlines()[:args.rules]), flush=True)
                cycles.append({"n": n, "alt": alt, "seconds": total, "calls": calls[first:],
                               "stages": [(r.stage, round(r.seconds, 2), r.records) for r in reports]})
                print(f"cycle {n} [{alt}]: {total:.2f} s; " + ", ".join(f"{s} {t:.2f}s/{r}" for s, t, r in cycles[-1]["stages"]), flush=True)
    finally:
        services.down(target)
    # event log
    events = []
    for f in EVENTS_DIR.iterdir():
        for line in f.read_text().splitlines():
            events.append(json.loads(line))
    jobs, stages, tasks = {}, {}, {}
    for e in events:
        ev = e["Event"]
        if ev == "SparkListenerJobStart":
            jobs[e["Job ID"]] = {"start": e["Submission Time"] / 1000, "stages": e["Stage IDs"]}
        elif ev == "SparkListenerJobEnd":
            jobs[e["Job ID"]]["end"] = e["Completion Time"] / 1000
        elif ev == "SparkListenerStageCompleted":
            s = e["Stage Info"]
            stages[s["Stage ID"]] = {"start": s.get("Submission Time", 0) / 1000, "end": s.get("Completion Time", 0) / 1000,
                                     "tasks": s["Number of Tasks"], "name": s.get("Stage Name", "")}
        elif ev == "SparkListenerTaskEnd":
            m = e.get("Task Metrics") or {}
            i = e["Task Info"]
            t = tasks.setdefault(e["Stage ID"], {"n": 0, "run": 0, "deser": 0, "cpu": 0, "wall": 0, "gc": 0})
            t["n"] += 1
            t["run"] += m.get("Executor Run Time", 0)
            t["deser"] += m.get("Executor Deserialize Time", 0)
            t["cpu"] += m.get("Executor CPU Time", 0) / 1e6
            t["gc"] += m.get("JVM GC Time", 0)
            t["wall"] += i["Finish Time"] - i["Launch Time"]
    out = []
    for c in cycles:
        print(f"\ncycle {c['n']} [{c['alt']}] {c['seconds']:.2f} s " + str(c["stages"]))
        for call in c["calls"]:
            secs = call["end"] - call["start"]
            js = [j for j in jobs.values() if call["start"] <= j["start"] <= call["end"]]
            span = 0.0
            last = 0.0
            for j in sorted(js, key=lambda j: j["start"]):
                s, e = j["start"], j.get("end", j["start"])
                s = max(s, last)
                if e > s:
                    span += e - s
                last = max(last, e)
            sids = [s for j in js for s in j["stages"] if s in stages]
            run = sum(tasks.get(s, {}).get("run", 0) for s in sids) / 1000
            deser = sum(tasks.get(s, {}).get("deser", 0) for s in sids) / 1000
            wall = sum(tasks.get(s, {}).get("wall", 0) for s in sids) / 1000
            ntasks = sum(tasks.get(s, {}).get("n", 0) for s in sids)
            call.update({"secs": secs, "jobs": len(js), "job_span": span, "stages": len(sids), "tasks": ntasks,
                         "task_run": run, "task_deser": deser, "task_wall": wall})
            if secs >= args.show and args.jobs:
                for j in sorted(js, key=lambda j: j["start"]):
                    names = [stages[x]["name"][:50] for x in j["stages"] if x in stages]
                    print(f"      job +{j['start'] - call['start']:5.2f}s {j.get('end', j['start']) - j['start']:5.2f}s {names[:3]}")
            if secs >= args.show:
                print(f"  {secs:5.2f}s cg {call['cg']:3d}/{call['cg_ms']:6.0f}ms jobs {len(js):2d} span {span:5.2f}s "
                      f"stages {len(sids):2d} tasks {ntasks:3d} run {run:5.2f} deser {deser:4.2f} wall {wall:5.2f}  {call['text'][:60]}")
        tot = sum(x["secs"] for x in c["calls"])
        print(f"  sql total {tot:.2f}s in {len(c['calls'])} statements; cg {sum(x['cg'] for x in c['calls'])} compiles "
              f"{sum(x['cg_ms'] for x in c['calls']):.0f} ms")
        out.append(c)
    (cp.OUT / "cycle_probe.json").write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
