"""A second Spark process on the shared catalog, for tests/catalog (run: python -m tests.catalog.other_process).

With its own SparkSession (zync.spark.spark_session, as every zync job) it
reads a table the test session made, ingests a topic with `zync from-kafka`
(the command's own code, in this process), waits for the table the test
session's `dbt run` builds meanwhile, and prints one JSON line of what it saw.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--read", required=True, help="table the test session made")
    args.add_argument("--topic", required=True)
    args.add_argument("--table", required=True, help="raw table from-kafka writes")
    args.add_argument("--await-table", required=True, help="table the test session's dbt run builds")
    args.add_argument("--await-out-rows", type=int, required=True, help="... until it holds this many out rows")
    opts = args.parse_args()

    from cli import main as cli
    from zync.config import load_target
    from zync.spark import spark_session

    spark = spark_session(load_target())
    seen = sorted(r[0] for r in spark.sql(f"select id from {opts.read}").collect())
    print("ready", flush=True)  # the test starts its dbt run now

    started = time.time()
    rc = cli.main(["from-kafka", "--topic", opts.topic, "--table", opts.table, "--exit-after", "2s"])
    ingest = [started, time.time()]

    deadline = time.monotonic() + 300
    outs = 0
    while outs < opts.await_out_rows:
        if time.monotonic() > deadline:
            print(f"{opts.await_table} never held {opts.await_out_rows} out rows", file=sys.stderr)
            return 1
        time.sleep(0.5)
        if spark.catalog.tableExists(opts.await_table):
            outs = spark.sql(f"select count(*) from {opts.await_table} where kind = 'out'").collect()[0][0]
    print(json.dumps({"session_table_ids": seen, "from_kafka_rc": rc, "ingest": ingest,
                      "dbt_table_out_rows": outs}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
