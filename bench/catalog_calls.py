"""Benchmark: what the shared catalog costs a table, a lookup by name against Spark's own, and the
view statements a mirror's build makes.

    .venv/bin/python bench/catalog_calls.py [--lookups 2000] [--views 100] [--blocks 8]

One command, alone on the machine: its own Kafka, registry and catalog (state folder
.local/bench-catalog-calls-state, ports of its own), stopped at the end. One warm engine, one
Delta table, one thread, as each of `zync run`'s dbt threads asks: Spark runs a process's calls
to the metastore one at a time (HiveExternalCatalog), so what one call costs here is what every
thread waits for.
- Lookups: a table by name, the project's session catalog (zync.catalog.OneLookupSessionCatalog,
  one metastore call) against Spark's V2SessionCatalog (the anchor: three calls), over the same
  session catalog, alternating in --blocks blocks (ABBA...) of --lookups / --blocks each, after
  an untimed block of each.
- Views: CREATE VIEW of a new name, CREATE OR REPLACE VIEW of an existing one (Spark drops and
  creates it), ALTER VIEW ... AS, DROP VIEW, --views of each, after an untimed ten.
Printed: milliseconds a lookup (median of the blocks' means, min-max) or a statement (median,
min-max) and the metastore calls each makes (Spark's own tally, HiveCatalogMetrics).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.own_stack import own_stack  # noqa: E402

STATE = ROOT / ".local" / "bench-catalog-calls-state"
PORTS = {"ZYNC_KAFKA_PORT": "24892", "ZYNC_REGISTRY_PORT": "24881", "ZYNC_CATALOG_PORT": "24927"}
SCHEMA = "bench_catalog_calls"
LOOKUPS = ("one lookup (project)", "Spark's V2SessionCatalog")
WARM_UP_VIEWS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lookups", type=int, default=2000, help="lookups of each design, over all blocks")
    parser.add_argument("--views", type=int, default=100, help="statements of each view kind")
    parser.add_argument("--blocks", type=int, default=8, help="blocks the lookups alternate in (ABBA...)")
    args = parser.parse_args()
    with own_stack(STATE, PORTS):
        run(args)


def run(args: argparse.Namespace) -> None:
    from testkit.catalog import metastore_calls, table_identifier
    from zync.config import load_target
    from zync.spark import spark_session
    from zync.spark_internals import java_class, java_session

    spark = spark_session(load_target(None))
    spark.sql(f"create database if not exists {SCHEMA}")
    spark.sql(f"create table {SCHEMA}.t (id bigint, name string) using delta")
    session_catalog = java_session(spark).sessionState().catalog()
    catalogs = {LOOKUPS[0]: java_class(spark, "zync.catalog.OneLookupSessionCatalog")(session_catalog),
                LOOKUPS[1]: java_class(spark, "org.apache.spark.sql.execution.datasources.v2.V2SessionCatalog")(
                    session_catalog)}
    identifier = table_identifier(spark, SCHEMA, "t")

    def timed(count: int, step: Callable[[int], object]) -> tuple[float, float]:
        """Milliseconds and metastore calls a step, over `count` steps."""
        before, started = metastore_calls(spark), time.perf_counter()
        for number in range(count):
            step(number)
        return 1000 * (time.perf_counter() - started) / count, (metastore_calls(spark) - before) / count

    block = max(1, args.lookups // args.blocks)
    for design in LOOKUPS:
        timed(block, lambda _, catalog=catalogs[design]: catalog.loadTable(identifier))
    lookups: dict[str, list[tuple[float, float]]] = {design: [] for design in LOOKUPS}
    for number in range(args.blocks):
        order = LOOKUPS if number % 4 in (0, 3) else LOOKUPS[::-1]
        for design in order:
            lookups[design].append(timed(block, lambda _, catalog=catalogs[design]: catalog.loadTable(identifier)))

    statements = {
        "CREATE VIEW (new)": "create view {name} as select id, name from {table}",
        "CREATE OR REPLACE VIEW (existing)": "create or replace view {name} as select id, name from {table}",
        "ALTER VIEW ... AS": "alter view {name} as select id, name from {table}",
        "DROP VIEW": "drop view {name}",
    }
    views: dict[str, list[tuple[float, float]]] = {kind: [] for kind in statements}
    for count, record in ((WARM_UP_VIEWS, False), (args.views, True)):
        for kind, text in statements.items():
            figures = [timed(1, lambda _, text=text, number=number: spark.sql(
                text.format(name=f"{SCHEMA}.v{number}", table=f"{SCHEMA}.t"))) for number in range(count)]
            if record:
                views[kind] = figures

    print(f"\n{' '.join(['bench/catalog_calls.py', *sys.argv[1:]])}: one thread, one Delta table; "
          f"{args.blocks} blocks of {block} lookups of each design, {args.views} statements of each view kind")
    print(f"{'lookup or statement':36s} {'ms median (min-max)':>22s} {'metastore calls':>16s}")
    for name, figures in (*lookups.items(), *views.items()):
        seconds = [ms for ms, _ in figures]
        spread = f"{statistics.median(seconds):.2f} ({min(seconds):.2f}-{max(seconds):.2f})"
        print(f"{name:36s} {spread:>22s} {statistics.median(c for _, c in figures):>16.1f}")
    spark.sql(f"drop database {SCHEMA} cascade")


if __name__ == "__main__":
    main()
