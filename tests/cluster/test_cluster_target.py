"""Target `cluster` end to end on a real standalone cluster: the same project and commands as `local`,
only `--target cluster` differs.

`zync run --target cluster` is a Spark application on the master (its driver in the zync process,
its executors on the worker) and moves zync's invoices demo, batch by batch, to exactly zync's own
NewInvoices stream and keeps the invoices mirror; meanwhile `dbt test` goes through the Spark Thrift
Server (another application of the same cluster) and this test's own local SparkSession reads the
same tables through the shared catalog.

The demo's first two batches flow here, produced together before the run's first cycle: every
Invoices change (the mirror's whole input), pairs from the snapshot and from new rows, and Dan's
invoice held back for its status. Batches 3-4 add only InvoiceStatus records (Dan's status, which
frees his invoice, and status updates); their exact stream through `zync run`, and the stream after
each batch, are asserted by tests/service/test_run_service.py (all four batches, target local) and
tests/integration/test_invoices_demo.py (each batch). On the cluster each further round of
batches cost ~15 s of cycles and exercised nothing the cluster does differently: the output
model's runs after the first (drained per-key order, then the analyst's run below) still read
the state earlier runs left.
"""

from __future__ import annotations

import json
import os
import subprocess

from dbt.cli.main import dbtRunner

from tests.cluster.conftest import CLUSTER_SERVICES
from testkit.harness import BIN, RunProcess, wait_until
from testkit.invoices import DEMO, invoices_project
from stack import cluster as spark_cluster
from stack import services

ZYNC_APP = "zync (cluster)"
BATCHES = (1, 2)  # the demo batches fed through the cluster (see above)


def master_state(cluster_target) -> dict:
    _, port = spark_cluster.master_address(cluster_target)
    state = spark_cluster.master_json(port)
    assert state is not None, "the master's JSON endpoint does not answer"
    return state


def expected_mirror(batches=BATCHES) -> set[tuple]:
    """The invoices mirror's live rows after the demo's batches (upper(item) as the mirror defines)."""
    rows: dict[int, tuple] = {}
    for batch in batches:
        file = DEMO / f"batch-{batch}" / "Invoices.jsonl"
        for line in file.read_text().splitlines() if file.exists() else []:
            record = json.loads(line)
            key, value = record["key"]["ID"], record["value"]
            if value is None or value["op"] == "d":
                rows.pop(key, None)
            else:
                after = value["after"]
                rows[key] = (key, after["customer"], after["item"].upper())
    return set(rows.values())


def test_zync_up_cluster_runs_a_master_a_worker_and_the_thrift_server_on_loopback(cluster, target):
    lines = services.status(target, cluster=True)
    for name in CLUSTER_SERVICES:
        assert any(line.startswith(f"{name}: up on 127.0.0.1:") for line in lines), lines
    state = master_state(cluster)
    assert [w["host"] for w in state["workers"] if w["state"] == "ALIVE"] == ["127.0.0.1"]
    thrift = [a for a in state["activeapps"] if a["name"] == spark_cluster.THRIFT_SERVER_NAME]
    assert len(thrift) == 1 and thrift[0]["cores"] > 0, state["activeapps"]


def test_the_invoices_demo_flows_on_the_cluster_while_dbt_test_runs_through_the_thrift_server(
        cluster, target, spark, tmp_path):
    project = invoices_project(tmp_path, "Cluster")
    run = RunProcess(project, tmp_path / "zync-run.log", target="cluster")
    status = None
    try:
        for batch in BATCHES:
            project.produce_batch(target, batch)
        want = project.expected(BATCHES[-1])
        wait_until(lambda: project.published_count(target) >= len(want), "the batches' output", run)
        assert project.published(target) == want
        # The running zync is an application of the cluster, granted executors on the worker.
        apps = [a for a in master_state(cluster)["activeapps"] if a["name"] == ZYNC_APP]
        assert len(apps) == 1 and apps[0]["cores"] > 0, master_state(cluster)["activeapps"]
        app_id = apps[0]["id"]

        # `zync etl status` on the cluster: an application of its own, started now so that its JVM's
        # start overlaps the data tests and the checks below; it only reads, and everything it reports
        # on is published by now.
        status = subprocess.Popen([str(BIN / "zync"), "etl", "status", "--target", "cluster"], cwd=project.path,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "ZYNC_PROJECT_DIR": str(project.path)})
        tested = dbtRunner().invoke(["test", "--project-dir", str(project.path), "--profiles-dir",
                                     str(project.path / "profiles"), "--target", "cluster"])
        assert tested.success, tested.exception or tested.result
        assert len(tested.result.results) >= 4  # the output's and the mirror's data tests ran
        assert run.terminate() == 0

        # The executors on the worker ran the application's tasks (the worker keeps each executor's log).
        logs = list((spark_cluster.worker_dir() / app_id).glob("*/stderr"))
        assert logs and any("Running task" in log.read_text() for log in logs), logs

        # An analyst's `dbt run` of the output through the Thrift Server: the model's statements without a
        # result set (CACHE TABLE, DROP VIEW, RESET) go through PyHive too; with nothing it can take
        # (every record done but Dan's invoice, still waiting for its status) it writes nothing.
        output = f"zync.{project.name('new_invoices')}"
        version_before = spark.sql(f"describe history {output} limit 1").collect()[0]["version"]
        ran = dbtRunner().invoke(["run", "--select", project.name("new_invoices"),
                                  "--project-dir", str(project.path),
                                  "--profiles-dir", str(project.path / "profiles"), "--target", "cluster"])
        assert ran.success, ran.exception or ran.result
        assert spark.sql(f"describe history {output} limit 1").collect()[0]["version"] == version_before

        # The same tables, seen by this process's local Spark through the shared catalog.
        mirror = spark.sql(f"select invoice_id, customer, item from zync.{project.name('invoices_mirror')} "
                           "where not coalesce(_zync_deleted, false)").collect()
        assert {tuple(r) for r in mirror} == expected_mirror()

        stdout, stderr = status.communicate(timeout=600)
    finally:
        if run.process.poll() is None:
            run.kill()
        if status is not None and status.poll() is None:
            status.kill()
    assert status.returncode == 0, stderr[-2000:]
    last = len(project.expected(BATCHES[-1])) - 1
    output_rows = [line.split() for line in stdout.splitlines() if line.startswith("  ")]
    assert [project.output_topic, str(last), str(last + 1), "up", "to", "date"] in output_rows, stdout
