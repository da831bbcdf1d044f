"""Benchmark: the least a `zync run` cycle can cost on this engine, from the cost of its smallest parts.

    .venv/bin/python bench/engine_floor.py [--reps 10]

One command, alone on the machine (its own state folder and ports). On the
SparkSession `zync run` uses (Delta tables in the shared catalog), it times,
in round robin, the smallest operations a cycle is made of, each over almost
no data, so that what is measured is the engine's fixed cost:

- `select 1`: a Spark SQL statement from Python, no table;
- plan a Delta read: EXPLAIN of a count over a raw-shaped Delta table
  (resolving the table, Delta's snapshot and file listing, planning);
- a Delta read of no row: the same count, run;
- a Delta append of 4 rows: one ingest commit (a DataFrame appended);
- an INSERT ... SELECT of 4 rows from one Delta table into a partitioned one
  (what an output model's run is at the least: a read and a commit);
- an in-process `dbt run` of a one-line view model (dbtRunner with the
  manifest parsed once, as `zync run` invokes dbt): dbt's own fixed cost;
- (--cold-reps times, after the rounds) the same `dbt run` as an analyst
  types it: a new process, its own Spark driver; and `dbt ls` of it, a new
  process that starts no engine: what any hand-run dbt command costs, even
  one served by a warm engine.

From them, the floor of one invoices cycle (two input topics, one output):
ingest = 2 appends; ETL = one dbt invocation + one INSERT + 2 more Delta
reads planned (the model reads both raw tables and the output's done rows);
egress = one Delta read. Any design that keeps the raw and output tables in
Delta (as zync's design does) and runs its ETL as a dbt model pays at
least this per cycle, and an event waits about 1.5 cycles on average (half a
cycle until the next ingest, one cycle through it). An analyst's hand-run `dbt run`
costs at least the cold `dbt run` of a view. Printed beside the latency
goals it bounds (TARGETS); JSON in bench/out/engine_floor.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
STATE = ROOT / ".local" / "bench-floor-state"
PORTS = {"ZYNC_KAFKA_PORT": "24592", "ZYNC_REGISTRY_PORT": "24581", "ZYNC_CATALOG_PORT": "24927"}
os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local"})
OUT = ROOT / "bench" / "out"

from testkit.invoices import invoices_project  # noqa: E402

TARGETS = {"p50 at 100 events/s": 3.0, "a cycle after 4 events": 2.0, "a hand-run dbt run": 5.0}
ROWS = 4


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=10, help="rounds of every operation (default 10)")
    parser.add_argument("--cold-reps", type=int, default=3, help="cold `dbt run` processes (default 3)")
    args = parser.parse_args()

    from stack import services
    from zync.config import load_target
    from zync.spark import spark_session
    from service.project import DbtProject

    target = load_target("local")
    services.down(target)
    shutil.rmtree(STATE, ignore_errors=True)
    services.up(target)
    cold: list[float] = []
    listed: list[float] = []
    try:
        project = invoices_project(STATE / "projects", "Floor")
        (project.path / "models" / "floor").mkdir(parents=True)
        (project.path / "models" / "floor" / "floor_noop.sql").write_text(
            "{{ config(materialized='view') }}\nselect 1 as one\n")
        os.chdir(project.path)
        spark = spark_session(target)
        spark.sql("create database if not exists zync")
        for table in ("floor_raw", "floor_out"):
            spark.sql(f"drop table if exists zync.{table}")
        spark.sql("create table zync.floor_raw (kafka struct<topic: string, partition: int, offset: bigint>, "
                  "value string) using delta")
        spark.sql("create table zync.floor_out (kafka struct<topic: string, partition: int, offset: bigint>, "
                  "kind string, value string) using delta partitioned by (kind)")
        next_offset = [0]

        def append() -> None:
            rows = [(("Floor", 0, next_offset[0] + i), f"v{i}") for i in range(ROWS)]
            next_offset[0] += ROWS
            spark.createDataFrame(rows, "kafka struct<topic: string, partition: int, offset: bigint>, value string") \
                .write.format("delta").mode("append").saveAsTable("zync.floor_raw")

        def insert() -> None:
            spark.sql(f"insert into zync.floor_out select kafka, 'out', value from zync.floor_raw "
                      f"where kafka.offset >= {next_offset[0] - ROWS}")

        dbt = DbtProject(project.path, target.spark_output_name)
        dbt.parse()

        def dbt_run() -> None:
            runs = dbt.run(["floor_noop"])
            if not all(r.ok for r in runs):
                raise SystemExit(f"dbt run of the view model failed: {runs}")

        count = "select count(*) from zync.floor_raw where kafka.offset < 0"
        operations = {
            "select 1": lambda: spark.sql("select 1").collect(),
            "plan a Delta read": lambda: spark.sql("explain " + count).collect(),
            "a Delta read of no row": lambda: spark.sql(count).collect(),
            f"a Delta append of {ROWS} rows": append,
            f"INSERT ... SELECT of {ROWS} rows": insert,
            "in-process dbt run of a view": dbt_run,
        }
        for action in operations.values():  # warm-up: first calls load classes and caches
            action()
        seconds: dict[str, list[float]] = {name: [] for name in operations}
        for rep in range(args.reps):
            for name, action in operations.items():
                seconds[name].append(timed(action))
            print(f"round {rep + 1}/{args.reps}: " + ", ".join(f"{n} {s[-1]:.3f}" for n, s in seconds.items()),
                  flush=True)
        dbt_cli = [str(Path(sys.executable).parent / "dbt"), "run", "--select", "floor_noop",
                   "--project-dir", str(project.path), "--profiles-dir", str(project.path / "profiles"),
                   "--target", "local"]
        for rep in range(args.cold_reps):
            started = time.perf_counter()
            subprocess.run(dbt_cli, check=True, stdout=subprocess.DEVNULL)
            cold.append(time.perf_counter() - started)
            started = time.perf_counter()
            subprocess.run([dbt_cli[0], "ls", *dbt_cli[2:]], check=True, stdout=subprocess.DEVNULL)
            listed.append(time.perf_counter() - started)
            print(f"cold dbt run {rep + 1}/{args.cold_reps}: {cold[-1]:.2f} s; dbt ls {listed[-1]:.2f} s", flush=True)
    finally:
        services.down(target)

    median = {name: statistics.median(s) for name, s in seconds.items()}
    print(f"\n{'operation':<34} {'median s':>9} {'min':>7} {'max':>7}")
    for name, s in seconds.items():
        print(f"{name:<34} {median[name]:9.3f} {min(s):7.3f} {max(s):7.3f}")
    ingest = 2 * median[f"a Delta append of {ROWS} rows"]
    etl = median["in-process dbt run of a view"] + median[f"INSERT ... SELECT of {ROWS} rows"] \
        + 2 * median["plan a Delta read"]
    egress = median["a Delta read of no row"]
    cycle = ingest + etl + egress
    print(f"\nfloor of one invoices cycle: ingest {ingest:.2f} s + ETL {etl:.2f} s + egress {egress:.2f} s "
          f"= {cycle:.2f} s (target for a cycle after 4 events: {TARGETS['a cycle after 4 events']:.0f} s)")
    print(f"implied p50 latency at a steady rate, ~1.5 cycles: {1.5 * cycle:.1f} s "
          f"(target: {TARGETS['p50 at 100 events/s']:.0f} s)")
    if cold:
        print(f"a hand-run `dbt run` of a view, a new process: {statistics.median(cold):.1f} s median "
              f"({min(cold):.1f}-{max(cold):.1f}; target for the invoices model: "
              f"{TARGETS['a hand-run dbt run']:.0f} s)")
        print(f"`dbt ls` of it, a new process, no engine: {statistics.median(listed):.1f} s median "
              f"({min(listed):.1f}-{max(listed):.1f})")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "engine_floor.json").write_text(json.dumps(
        {"reps": args.reps, "seconds": seconds, "median": median,
         "floor": {"ingest": ingest, "etl": etl, "egress": egress, "cycle": cycle, "p50": 1.5 * cycle},
         "cold_dbt_run": cold, "cold_dbt_ls": listed,
         "targets": TARGETS}, indent=1))


if __name__ == "__main__":
    main()
