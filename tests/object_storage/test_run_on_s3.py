"""The invoices demo with its warehouse on the S3 server: `zync run --once` (ingest, the output model
and the mirror, egress) and `dbt test`, each a process of its own as a user runs them, with nothing of
the data on local disk; and `zync run` through a second run beside it and kill -9, exactly once.

The process gets the warehouse by ZYNC_WAREHOUSE and a schema of its own by ZYNC_SCHEMA: the suite's
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
from zync import storage


def _run(command: list[str], project, env: dict[str, str]) -> str:
    result = subprocess.run(command, cwd=project.path, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return result.stdout + result.stderr


def test_zync_run_and_dbt_test_keep_every_table_on_s3(target, spark, object_store, tmp_path):
    project = invoices_project(tmp_path, "OnS3")
    schema = f"zync_s3_{uuid.uuid4().hex[:8]}"
    warehouse = f"{object_store}/warehouse"
    env = {**os.environ, "ZYNC_PROJECT_DIR": str(project.path), "ZYNC_WAREHOUSE": warehouse, "ZYNC_SCHEMA": schema,
           "ZYNC_STATE_DIR": str(tmp_path / "state")}
    run_once = [str(BIN / "zync"), "run", "--once"]
    for batch in (1, 2):
        project.produce_batch(target, batch)
        _run(run_once, project, env)
        assert project.published(target) == project.expected(batch)

    tables = {r.tableName for r in spark.sql(f"show tables in {schema}").collect()}
    assert {project.name(t).lower() for t in ("raw_invoices", "raw_invoice_status", "new_invoices")} <= tables
    for table in tables:
        detail = spark.sql(f"describe detail {schema}.`{table}`").first() if table.startswith("raw") else None
        if detail is not None:
            assert detail["location"].startswith(warehouse), detail["location"]
    assert storage.location(f"{warehouse}/{schema}.db").has_any()
    assert not (tmp_path / "state" / "warehouse").exists()

    out = _run([str(BIN / "dbt"), "test", "--profiles-dir", "profiles"], project, env)
    assert "PASS=" in out and "ERROR=0" in out, out[-3000:]


def test_zync_run_on_s3_keeps_the_stream_exact_through_a_second_run_and_kill_9(target, object_store, tmp_path):
    """The fault campaign's two trials that race for commits, short and seeded: a second `zync run` of
    the same project beside the first, then kill -9 at a random moment of a batch's cycle and a restart."""
    project = invoices_project(tmp_path, "FaultsOnS3")
    env = {"ZYNC_WAREHOUSE": f"{object_store}/faults", "ZYNC_SCHEMA": f"zync_s3_{uuid.uuid4().hex[:8]}"}
    log = tmp_path / "zync-run.log"
    chance = random.Random(int(os.environ.get("ZYNC_RUN_KILL_SEED", "14")))
    run = RunProcess(project, log, env=env)
    second = None
    try:
        project.produce_batch(target, 1)
        wait_until(lambda: project.published_count(target) >= len(project.expected(1)), "batch 1 output", run)
        assert project.published(target) == project.expected(1)

        second = RunProcess(project, tmp_path / "second-run.log", env=env)
        project.produce_batch(target, 2)
        wait_until(lambda: project.published_count(target) >= len(project.expected(2)), "batch 2 output", run)
        time.sleep(5)  # a duplicate would land now
        second.kill()
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
        for process in (run, second):
            if process is not None and process.process.poll() is None:
                process.kill()
    records = project.published(target)
    assert [r["kafka"]["offset"] for r in records] == list(range(len(records)))
