"""Benchmark: a new raw table's create and first appends, ingest's own create against Delta's CREATE
TABLE through the catalog.

    .venv/bin/python bench/table_create.py [--tables 30] [--rows 2000] [--seed 1]

One command, alone on the machine: its own Kafka, registry and catalog (state folder
.local/bench-table-create-state, ports of its own), stopped at the end. One warm engine creates
--tables raw tables by name, one at a time, each on a Spark session of its own as `zync run`'s
ingests are, and appends two batches of --rows rows written in Python to each (what a Debezium
table's snapshot and its first changes cost a table). The two designs of the create alternate
table by table (ABBA):
- ingest: what a first batch written in Python gets (ingest/table.py RawTable.create): ingest's
  own empty Delta commit, then one catalog call;
- catalog: the anchor, Delta's CREATE TABLE through the catalog (spark.catalog.createTable, the
  table's properties as session defaults, as a first append sets them), then the catalog's
  answer for the table's location, which the first append needs.
The first five tables of each design warm the engine untimed. Printed: each step's median, min and
max in milliseconds for both designs, and each table's rows checked.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.own_stack import own_stack  # noqa: E402

STATE = ROOT / ".local" / "bench-table-create-state"
PORTS = {"ZYNC_KAFKA_PORT": "24792", "ZYNC_REGISTRY_PORT": "24781", "ZYNC_CATALOG_PORT": "24727"}
DESIGNS = ("ingest", "catalog")
WARM_UP = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=30, help="tables of each design")
    parser.add_argument("--rows", type=int, default=2000, help="rows of each of the two batches")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with own_stack(STATE, PORTS):
        run(args)


def run(args: argparse.Namespace) -> None:
    import pyarrow as pa
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_type

    from bench.bootstrap import order
    from ingest.table import RawTable
    from zync.config import load_target
    from zync.spark import spark_session

    class CatalogCreatedTable(RawTable):
        """The anchor: the table created as Delta's CREATE TABLE through the catalog makes it."""

        def create(self, key_type, value_type, where):  # noqa: ANN001 - RawTable.create's signature
            from ingest.table import TXN_APP_ID, as_nullable
            from zync.envelope import kafka_struct
            schema = as_nullable(T.StructType([T.StructField("kafka", kafka_struct()),
                                               T.StructField("key", key_type), T.StructField("value", value_type)]))
            with self._creating(schema, f"{TXN_APP_ID} run {self.run_id} create"):
                self.spark.catalog.createTable(self.name, source="delta", schema=schema)
            self._exists = self._created_here = True
            self._properties = {}
            self._path()  # the catalog's answer for the location, which append_rows needs
            return True

    random.seed(args.seed)
    spark = spark_session(load_target(None))
    spark.sql("create database if not exists bench")
    key_type = T.StructType([T.StructField("id", T.IntegerType())])
    value_type = T.StructType([T.StructField("name", T.StringType()), T.StructField("amount", T.DoubleType())])
    at = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

    def rows(schema: T.StructType, first: int) -> pa.Table:
        arrow = pa.schema([pa.field(f.name, to_arrow_type(f.dataType), nullable=f.nullable) for f in schema.fields])
        return pa.Table.from_pylist([
            {"kafka": {"topic": "t", "partition": 0, "offset": first + i, "timestamp": at,
                       "key_schema_id": 1, "value_schema_id": 2},
             "key": {"id": first + i}, "value": {"name": f"n{random.randrange(10**6)}", "amount": random.random()}}
            for i in range(args.rows)], schema=arrow)

    took: dict[str, dict[str, list[float]]] = {d: {} for d in DESIGNS}
    for number, design in enumerate(order(2 * (args.tables + WARM_UP), DESIGNS)):
        session = spark.newSession()
        name = f"bench.t{number}_{design}"
        table = (RawTable if design == "ingest" else CatalogCreatedTable)(session, name=name)
        steps = {
            "exists (no table)": lambda: table.exists(),
            "create": lambda: table.create(key_type, value_type, "batch 1"),
            "first batch": lambda: table.append_rows(lambda schema: rows(schema, 0), "batch 1"),
            "second batch": lambda: table.append_rows(lambda schema: rows(schema, args.rows), "batch 2"),
        }
        timed: dict[str, float] = {}
        for step, call in steps.items():
            started = time.monotonic()
            outcome = call()
            timed[step] = time.monotonic() - started
            if step != "exists (no table)" and not outcome:
                raise SystemExit(f"{design}: {step} of {name} did nothing ({table.declined})")
        timed["create to first batch"] = timed["create"] + timed["first batch"]
        count = spark.table(name).count()
        if count != 2 * args.rows:
            raise SystemExit(f"{name} holds {count} rows, not {2 * args.rows}")
        if number >= 2 * WARM_UP:
            for step, seconds in timed.items():
                took[design].setdefault(step, []).append(seconds)
    print(f"\n{' '.join(['bench/table_create.py', *sys.argv[1:]])}: {args.tables} tables of each design "
          f"(after {WARM_UP} untimed), two batches of {args.rows:,} rows each, every table's rows checked")
    print(f"{'step':24s} " + "  ".join(f"{d + ' median (min-max) ms':>34s}" for d in DESIGNS))
    for step in took["ingest"]:
        cells = []
        for design in DESIGNS:
            values = took[design][step]
            cells.append(f"{statistics.median(values) * 1000:>16.0f} ({min(values) * 1000:.0f}-"
                         f"{max(values) * 1000:.0f})".rjust(34))
        print(f"{step:24s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
