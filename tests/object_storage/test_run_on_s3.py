"""The invoices demo with its warehouse on the S3 server: `zync run --once` (ingest, the output model
and the mirror, egress) and `dbt test`, each a process of its own as a user runs them, with nothing of
the data on local disk.

The process gets the warehouse by ZYNC_WAREHOUSE and a schema of its own by ZYNC_SCHEMA: the suite's
catalog already has the default schema, on local disk.
"""

from __future__ import annotations

import os
import subprocess
import uuid

from testkit.harness import BIN
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
