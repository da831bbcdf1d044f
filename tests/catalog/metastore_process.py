"""A Spark process on the metastore service, for tests/catalog/test_metastore_service.py
(run: python -m tests.catalog.metastore_process; ZYNC_METASTORE_URI names the service).

With its own SparkSession (zync.spark.spark_session, as every zync job) it runs the given statements,
then the given queries, then dbt commands in a dbt project folder (in this process, as `zync run`
does), and prints one JSON line: the metastore URI and session catalog the session runs with, each
query's rows and each dbt command's node statuses.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--sql", action="append", default=[], help="a statement to run")
    args.add_argument("--query", action="append", default=[], help="a query whose rows to print")
    args.add_argument("--dbt-project", type=Path, help="a dbt project folder to run --dbt commands in")
    args.add_argument("--dbt", action="append", default=[], help="a dbt command (run, test) for that project")
    opts = args.parse_args()

    from testkit.scratch import run_dbt
    from zync.config import load_target
    from zync.spark import spark_session
    from zync.spark_internals import java_context, java_session

    spark = spark_session(load_target())
    for statement in opts.sql:
        spark.sql(statement)
    rows = {query: [list(row) for row in spark.sql(query).collect()] for query in opts.query}
    dbt = {command: run_dbt(opts.dbt_project, command).statuses() for command in opts.dbt}
    session_catalog = java_session(spark).sessionState().catalogManager().v2SessionCatalog()
    print(json.dumps({
        "metastore_uris": java_context(spark).hadoopConfiguration().get("hive.metastore.uris"),
        "session_catalog": session_catalog.getClass().getName(),
        "rows": rows,
        "dbt": dbt,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
