"""Benchmark: a whole database's first mirror build, dbt's models one at a time against several at once.

    .venv/bin/python bench/first_build.py [--tables 40] [--rows 2000]
        [--rounds 4] [--threads 4] [--compare threads|codegen|base] [--seed 1] [--catalog derby|service]

One command, alone on the machine: its own Kafka, registry and catalog (state folder
.local/bench-first-build-state, ports of its own), stopped at the end. It makes one database of
--tables Debezium-shaped topics (bench/wide.py's shape) of --rows snapshot records each, ingests
every topic into its raw table (untimed), and compiles a project with one pattern entry mirroring
them all (`zync etl compile`, as a user does). Each round then drops every mirror and builds them
all in one in-process `dbt run`, as `zync run`'s first cycle does (the manifest parsed once,
adaptive execution off, dbt's relation cache by name). The rounds alternate two designs (ABBA):
--compare threads (the default):
- threads-1: one model at a time, as `zync run` built mirrors when they shared one session;
- threads-N: --threads models at once, each dbt thread on its own session (dbt_zync/thread_sessions.py),
  the profile's setting.
--compare codegen, both with --threads models at once:
- compiled: Spark's generated code, as `zync run` built every mirror before a small first build
  ran interpreted;
- interpreted: what `zync run` does for a first build over at most SMALL_RUN_ROWS raw rows
  (service/engine_settings.py small_run_engine).
--compare base, both interpreted with --threads models at once:
- base: each mirror's base table and its view, as a plain `dbt run` builds a mirror;
- view: each mirror's view alone, over its raw changes, what `zync run` makes of a small first
  build (dbt var zync_mirror_defer_base; service/run.py first_views).
--catalog service runs it all on the catalog as a service (`zync up --metastore`, ZYNC_METASTORE_URI)
instead of Derby's embedded catalog (derby, the default).
A first round over a few mirrors, each design once, warms the engine untimed.
Printed: each round's seconds and seconds a mirror, every mirror's row count checked against the
snapshot, and each design's median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bootstrap import order  # noqa: E402
from bench.own_stack import own_stack  # noqa: E402
STATE = ROOT / ".local" / "bench-first-build-state"
PORTS = {"ZYNC_KAFKA_PORT": "24692", "ZYNC_REGISTRY_PORT": "24681", "ZYNC_CATALOG_PORT": "24827",
         "ZYNC_POSTGRES_PORT": "24832", "ZYNC_METASTORE_PORT": "24883"}
SERVER = "fb"
WARM_UP_MIRRORS = 6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--rows", type=int, default=2000, help="snapshot records per table")
    parser.add_argument("--rounds", type=int, default=4, help="rounds, the designs alternating (ABBA...)")
    parser.add_argument("--threads", type=int, default=4, help="models at once in the threaded design")
    parser.add_argument("--compare", choices=("threads", "codegen", "base"), default="threads",
                        help="the two designs: one thread against --threads, compiled against interpreted, "
                             "or a base and a view against a view alone")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--catalog", choices=("derby", "service"), default="derby",
                        help="Derby's catalog, each process's embedded client, or the metastore service")
    args = parser.parse_args()
    if args.compare == "threads" and args.threads < 2:
        raise SystemExit("--threads must be 2 or more: the other design is one thread")
    with own_stack(STATE, PORTS, *(("--metastore",) if args.catalog == "service" else ())):
        if args.catalog == "service":
            from stack import metastore

            os.environ["ZYNC_METASTORE_URI"] = metastore.uri()
        run(args)


def ingest_all(target, spark, topics: list[str]) -> None:
    """Every topic into its raw table, as `zync run`'s first ingest stage does."""
    from ingest.from_kafka import Ingest, ingest_progress
    from zync import kafka_client

    watcher, admin = kafka_client.consumer(target, group="bench-first-build"), kafka_client.admin(target)
    marks = kafka_client.watermarks(watcher, admin, set(topics))
    jobs = [Ingest(target, [topic], progress=ingest_progress(quiet=True), spark=spark.newSession()) for topic in topics]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda job: job.run(exit_after=0.0, marks=marks), jobs))
    for job in jobs:
        job.close()
    watcher.close()


def run(args: argparse.Namespace) -> None:
    from bench.wide import Source, mirror_name, pattern_mirror_file
    from service.project import DbtProject
    from service.engine_settings import small_run_engine, without_adaptive_execution
    from testkit.scratch import drop_relation, user_project
    from zync.config import load_target
    from zync.spark import spark_session

    target = load_target(None)
    spark = spark_session(target)
    source = Source(target, SERVER, args.tables, args.seed)
    source.snapshot(args.rows)
    source.flush()
    started = time.monotonic()
    ingest_all(target, spark, source.topics)
    print(f"ingested {source.records:,} records of {args.tables} topics in {time.monotonic() - started:.1f} s",
          flush=True)
    folder = user_project(STATE / "project", {"mirrors.yml": pattern_mirror_file(SERVER, source.topics)})
    compiled = subprocess.run([str(ROOT / ".venv" / "bin" / "zync"), "etl", "compile"], cwd=folder, text=True,
                              capture_output=True, env={**os.environ, "ZYNC_PROJECT_DIR": str(folder)})
    if compiled.returncode != 0:
        raise SystemExit(f"zync etl compile failed:\n{compiled.stdout}{compiled.stderr}")
    project = DbtProject(folder, target.name)
    project.parse()
    mirrors = [mirror_name(SERVER, table) for table in source.tables]
    designs = {"threads": ("threads-1", f"threads-{args.threads}"), "codegen": ("compiled", "interpreted"),
               "base": ("base", "view")}[args.compare]
    took: dict[str, list[float]] = {d: [] for d in designs}
    rounds = [(0, d, mirrors[:WARM_UP_MIRRORS]) for d in designs] + [
        (n, d, mirrors) for n, d in enumerate(order(args.rounds, designs), start=1)]
    for number, design, names in rounds:
        for name in names:
            drop_relation(spark, f"zync.{name}")
            drop_relation(spark, f"zync.{name}__raw_changes")
        threads = int(design.split("-")[1]) if design.startswith("threads-") else args.threads
        engine = small_run_engine if design in ("interpreted", "base", "view") else without_adaptive_execution
        started = time.monotonic()
        with engine(spark):
            runs = project.run(names, threads=threads,
                               variables={"zync_mirror_defer_base": names} if design == "view" else None)
        seconds = time.monotonic() - started
        failed = [f"{r.name}: {r.message}" for r in runs if not r.ok]
        short = [(name, count) for name in names
                 if (count := spark.table(f"zync.{name}").count()) != args.rows]
        based = [name for name in names if spark.catalog.tableExists(f"zync.{name}__base")]
        if based != (names if design != "view" else []):
            raise SystemExit(f"round {number} ({design}): {len(based)} of {len(names)} mirrors have a base table")
        if number:
            took[design].append(seconds)
        print(f"round {number or 'warm-up'} ({design}): {seconds:.1f} s for {len(names)} mirrors, "
              f"{seconds / len(names):.2f} s a mirror; "
              + ("all built, all complete" if not failed and not short else f"FAILED {failed[:3]} SHORT {short[:3]}"),
              flush=True)
        if failed or short:
            raise SystemExit(f"{len(failed)} mirrors failed, {len(short)} do not hold their table's {args.rows} rows")
    print(f"\n{' '.join(['bench/first_build.py', *sys.argv[1:]])}")
    for design, seconds in took.items():
        if seconds:
            median = statistics.median(seconds)
            print(f"{design}: median {median:.1f} s, {median / args.tables:.2f} s a mirror ({args.tables} mirrors of "
                  f"{args.rows} rows; rounds {', '.join(f'{s:.1f}' for s in seconds)})")


if __name__ == "__main__":
    main()
