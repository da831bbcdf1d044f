"""The invoices demo with its warehouse on the S3 server, as a user runs it, each step a process of its
own: `zync run --once` (ingest, the output model and the mirror, egress) with every table on the
store and none on local disk; then `zync run` through the fault campaign's two trials that race for
commits, short and seeded (a second `zync run` of the same project beside the first; kill -9 at a
random moment of a batch's cycle and a restart), exactly once; then `dbt test` on the same tables.

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
from zync import storage


def _run(command: list[str], project, env: dict[str, str]) -> str:
    result = subprocess.run(command, cwd=project.path, env={**os.environ, "ZYNC_PROJECT_DIR": str(project.path), **env},
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return result.stdout + result.stderr


def test_zync_run_on_s3_is_exact_through_a_second_run_and_kill_9_and_dbt_test_passes(target, spark, object_store,
                                                                                    tmp_path):
    project = invoices_project(tmp_path, "OnS3")
    schema = f"zync_s3_{uuid.uuid4().hex[:8]}"
    warehouse = f"{object_store}/warehouse"
    env = {"ZYNC_WAREHOUSE": warehouse, "ZYNC_SCHEMA": schema, "ZYNC_STATE_DIR": str(tmp_path / "state")}

    project.produce_batch(target, 1)
    _run([str(BIN / "zync"), "run", "--once"], project, env)
    assert project.published(target) == project.expected(1)
    tables = {r.tableName for r in spark.sql(f"show tables in {schema}").collect()}
    assert {project.name(t).lower() for t in ("raw_invoices", "raw_invoice_status", "new_invoices")} <= tables
    for table in (project.name("raw_invoices"), project.name("new_invoices")):
        location = spark.sql(f"describe detail {schema}.{table}").first()["location"]
        assert location.startswith(f"{warehouse}/{schema}.db/"), location
    assert storage.location(f"{warehouse}/{schema}.db").has_any()
    assert not (tmp_path / "state" / "warehouse").exists()

    log = tmp_path / "zync-run.log"
    chance = random.Random(int(os.environ.get("ZYNC_RUN_KILL_SEED", "14")))
    run, second = RunProcess(project, log, env=env), None
    try:
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

    out = _run([str(BIN / "dbt"), "test", "--profiles-dir", "profiles"], project, env)
    assert "PASS=" in out and "ERROR=0" in out, out[-3000:]
