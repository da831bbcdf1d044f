"""The invoices demo with its warehouse on the S3 server, as a user runs it, each step a process of its
own: `zync run` (ingest, the output model and the mirror, egress) with every table on the store and
none on local disk, kill -9 at a seeded random moment of a batch's cycle and a restart, exactly
once; then `dbt test` on the same tables.

Two processes racing for one table's commits on the store are tests/object_storage/test_commits.py's
(two writer processes appending) and tests/ingest/test_exactly_once.py's (a second ingest, on S3); a
hand-run `dbt run` racing `zync run` for the output table is tests/service/test_run_service.py's: the
run that loses is refused by the same commit, wherever the table is.

The processes get the warehouse by ZYNC_WAREHOUSE and a schema of their own by ZYNC_SCHEMA: the suite's
catalog already has the default schema, on local disk.
"""

from __future__ import annotations

import os
import random
import time
import uuid

from testkit.harness import RunProcess, wait_until
from testkit.invoices import invoices_project
from testkit.scratch import run_dbt
from zync import storage


def test_zync_run_on_s3_is_exact_through_kill_9_and_dbt_test_passes(target, spark, object_store, tmp_path):
    project = invoices_project(tmp_path, "OnS3")
    schema = f"zync_s3_{uuid.uuid4().hex[:8]}"
    warehouse = f"{object_store}/warehouse"
    env = {"ZYNC_WAREHOUSE": warehouse, "ZYNC_SCHEMA": schema, "ZYNC_STATE_DIR": str(tmp_path / "state")}

    log = tmp_path / "zync-run.log"
    chance = random.Random(int(os.environ.get("ZYNC_RUN_KILL_SEED", "14")))
    project.produce_batch(target, 1)
    run = RunProcess(project, log, env=env)
    try:
        wait_until(lambda: project.published_count(target) >= len(project.expected(1)), "batch 1 output", run)
        assert project.published(target) == project.expected(1)
        tables = {r.tableName for r in spark.sql(f"show tables in {schema}").collect()}
        assert {project.name(t).lower() for t in ("raw_invoices", "raw_invoice_status", "new_invoices")} <= tables
        for table in (project.name("raw_invoices"), project.name("new_invoices")):
            location = spark.sql(f"describe detail {schema}.{table}").first()["location"]
            assert location.startswith(f"{warehouse}/{schema}.db/"), location
        assert storage.location(f"{warehouse}/{schema}.db").has_any()
        assert not (tmp_path / "state" / "warehouse").exists()

        project.produce_batch(target, 2)
        wait_until(lambda: project.published_count(target) >= len(project.expected(2)), "batch 2 output", run)
        assert project.published(target) == project.expected(2)

        project.produce_batch(target, 3)
        time.sleep(chance.uniform(0.0, 8.0))
        run.kill()
        run = RunProcess(project, log, env=env)
        wait_until(lambda: project.published_count(target) >= len(project.expected(3)), "batch 3 output", run)
        time.sleep(3)  # a duplicate would land now
        assert project.published(target) == project.expected(3)
        assert run.terminate() == 0
    finally:
        if run.process.poll() is None:
            run.kill()
    records = project.published(target)
    assert [r["kafka"]["offset"] for r in records] == list(range(len(records)))

    # dbt test in this process (its engine reaches the store as every process of the suite does), on the
    # schema on the store: dbt reads the profile's ZYNC_SCHEMA at each invocation.
    os.environ["ZYNC_SCHEMA"] = schema
    try:
        tested = run_dbt(project.path, "test")
    finally:
        del os.environ["ZYNC_SCHEMA"]
    assert tested.results and all(str(r.status) == "pass" for r in tested.results), tested.results
