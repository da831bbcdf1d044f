"""The invoices demo with its warehouse on the S3 server, as a user runs it, each step a process of its
own: `zync run` (ingest, the output model and the mirror, egress) with every table on the store and
none on local disk, a hand-run `dbt run` of its output model racing it for the output table's
commits, and kill -9 at a seeded random moment of a batch's cycle and a restart, exactly once; then `dbt test` on the same tables. (Two processes racing for one table's
commits on the store: also tests/ingest/test_exactly_once.py's second ingest, on S3.)

The processes get the warehouse by ZYNC_WAREHOUSE and a schema of their own by ZYNC_SCHEMA: the suite's
catalog already has the default schema, on local disk.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
import uuid

from testkit.harness import BIN, RunProcess, wait_until
from testkit.invoices import invoices_project
from testkit.scratch import run_dbt
from zync import storage


def test_zync_run_on_s3_is_exact_through_a_hand_run_dbt_and_kill_9_and_dbt_test_passes(target, spark, object_store,
                                                                                    tmp_path):
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

        # Batch 2 with an analyst's `dbt run` of the output model in a process of its own, racing zync
        # run's for the output table's next commit on the store: one wins, the other writes nothing.
        project.produce_batch(target, 2)
        hand = subprocess.Popen([str(BIN / "dbt"), "run", "--select", project.name("new_invoices"),
                                 "--profiles-dir", "profiles"], cwd=project.path, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env={**os.environ, "ZYNC_PROJECT_DIR": str(project.path), **env})
        wait_until(lambda: project.published_count(target) >= len(project.expected(2)), "batch 2 output", run)
        hand_out = hand.communicate(timeout=600)[0]
        assert hand.returncode == 0 or "another run of" in hand_out or "Concurrent" in hand_out, hand_out[-3000:]
        time.sleep(3)  # a duplicate would land now
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
