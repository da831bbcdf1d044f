"""Benchmark: the embedded catalog (each process's metastore client over Derby's server) against the
catalog as a service (Hive's metastore over Thrift, its database in PostgreSQL), in the same run.

    .venv/bin/python bench/catalog_service.py [--lookups 2000] [--views 100] [--blocks 8]

One command, alone on the machine: its own Kafka, registry, Derby server, PostgreSQL and metastore
service (`zync up --metastore`, state folder .local/bench-catalog-service-state, ports of its own),
stopped at the end. Two warm Spark processes, one per catalog, each with one Delta table in a
database of its own, take turns block by block (ABBA...), after an untimed block each, so both see
the same machine:
- a lookup: a table by name through the project's session catalog (one metastore call), as every
  statement that names a table makes; --lookups over all blocks, the figure a block's mean;
- CREATE VIEW of a new name (what a mirror's build makes), then DROP VIEW of it: --views of each
  over all blocks, each timed alone.
Printed: milliseconds, median (min-max), and the metastore calls each makes (Spark's own tally).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.own_stack import own_stack  # noqa: E402

STATE = ROOT / ".local" / "bench-catalog-service-state"
PORTS = {"ZYNC_KAFKA_PORT": "24992", "ZYNC_REGISTRY_PORT": "24981", "ZYNC_CATALOG_PORT": "24937",
         "ZYNC_POSTGRES_PORT": "24932", "ZYNC_METASTORE_PORT": "24983"}
CATALOGS = ("Derby, embedded client", "metastore service")
SCHEMA = "bench_catalog_service"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lookups", type=int, default=2000, help="lookups in each catalog, over all blocks")
    parser.add_argument("--views", type=int, default=100, help="CREATE VIEW and DROP VIEW in each catalog")
    parser.add_argument("--blocks", type=int, default=8, help="blocks the catalogs alternate in (ABBA...)")
    parser.add_argument("--serve", metavar="SCHEMA", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    with own_stack(STATE, PORTS, "--metastore"):
        run(args)


def serve(schema: str) -> None:
    """One catalog's Spark process: answers `lookups N` and `views FIRST COUNT` lines with JSON lines.
    Its database is its own: both catalogs place tables in the one warehouse."""
    import time

    from testkit.catalog import metastore_calls, table_identifier
    from zync.config import load_target
    from zync.spark import spark_session
    from zync.spark_internals import java_class, java_session

    spark = spark_session(load_target(None))
    spark.sql(f"create database if not exists {schema}")
    spark.sql(f"create table if not exists {schema}.t (id bigint, name string) using delta")
    catalog = java_class(spark, "zync.catalog.OneLookupSessionCatalog")(java_session(spark).sessionState().catalog())
    identifier = table_identifier(spark, schema, "t")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        kind, *numbers = line.split()
        if kind == "lookups":
            count = int(numbers[0])
            calls, started = metastore_calls(spark), time.perf_counter()
            for _ in range(count):
                catalog.loadTable(identifier)
            print(json.dumps({"ms": 1000 * (time.perf_counter() - started) / count,
                              "calls": (metastore_calls(spark) - calls) / count}), flush=True)
        else:
            first, count = map(int, numbers)
            figures: dict[str, list[list[float]]] = {"create": [], "drop": []}
            for number in range(first, first + count):
                for step, text in (("create", f"create view {schema}.v{number} as select id, name from {schema}.t"),
                                   ("drop", f"drop view {schema}.v{number}")):
                    calls, started = metastore_calls(spark), time.perf_counter()
                    spark.sql(text)
                    figures[step].append([1000 * (time.perf_counter() - started), metastore_calls(spark) - calls])
            print(json.dumps(figures), flush=True)


class Worker:
    def __init__(self, service_uri: str, schema: str):
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", schema], cwd=ROOT,
            env={**os.environ, "ZYNC_METASTORE_URI": service_uri}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)
        self.ask("")

    def ask(self, line: str) -> dict:
        if line:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise SystemExit(f"the worker process ended (exit {self.process.wait()})")
        return json.loads(answer)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(60)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def run(args: argparse.Namespace) -> None:
    from stack import metastore

    workers = {CATALOGS[0]: Worker("", f"{SCHEMA}_derby"), CATALOGS[1]: Worker(metastore.uri(), f"{SCHEMA}_service")}
    try:
        lookups = max(1, args.lookups // args.blocks)
        views = max(1, args.views // args.blocks)
        for worker in workers.values():  # warm: untimed
            worker.ask(f"lookups {lookups}")
            worker.ask(f"views 0 {views}")
        figures: dict[str, dict[str, list]] = {name: {"lookup": [], "create": [], "drop": []} for name in CATALOGS}
        for block in range(args.blocks):
            order = CATALOGS if block % 4 in (0, 3) else CATALOGS[::-1]
            for name in order:
                figures[name]["lookup"].append(workers[name].ask(f"lookups {lookups}"))
                done = workers[name].ask(f"views {views * (block + 1)} {views}")
                figures[name]["create"] += done["create"]
                figures[name]["drop"] += done["drop"]
    finally:
        for worker in workers.values():
            worker.close()

    print(f"\n{' '.join(['bench/catalog_service.py', *sys.argv[1:]])}: one thread each; {args.blocks} blocks "
          f"alternating (ABBA) of {lookups} lookups and {views} CREATE VIEW + DROP VIEW in each catalog")
    print(f"{'catalog':24s} {'statement':12s} {'ms median (min-max)':>22s} {'metastore calls':>16s}")
    for name in CATALOGS:
        rows = (("lookup", [f["ms"] for f in figures[name]["lookup"]], [f["calls"] for f in figures[name]["lookup"]]),
                ("CREATE VIEW", [ms for ms, _ in figures[name]["create"]], [c for _, c in figures[name]["create"]]),
                ("DROP VIEW", [ms for ms, _ in figures[name]["drop"]], [c for _, c in figures[name]["drop"]]))
        for statement, ms, calls in rows:
            print(f"{name:24s} {statement:12s} {spread(ms):>22s} {statistics.median(calls):>16.1f}")


if __name__ == "__main__":
    main()
