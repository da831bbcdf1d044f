"""Target `cluster` end to end on a real standalone cluster that shares only the S3 server and the
catalog service with its drivers: the same project and commands as `local`, only `--target cluster`
and the variables of a cluster on object storage (tests/cluster/conftest.py) differ.

Its two workers run where the project, the state folder and the Python environment are empty folders
(the test looks through each worker's own /proc root, and a query that makes an executor open a
driver's file fails), so every table `zync run` and dbt make is on the S3 server and in the catalog
service.

`zync run --target cluster` is a Spark application on the master (its driver in the zync process,
its executors on the workers) and moves zync's invoices demo, batch by batch, to exactly zync's own
NewInvoices stream and keeps the invoices mirror, and mirrors a database of 20 tables through one
pattern entry; meanwhile `dbt test` goes through the Spark Thrift Server (another application of the
same cluster), which also serves this test's reads of the same tables. That run takes five minutes
here: it is a campaign of its own (`make test-cluster`, marker `campaign`), and `make test` runs its
short version, `zync run --once` over the demo's first batch and a database of three tables.

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

import contextlib
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from dbt.cli.main import dbtRunner
from pyhive import hive

from stack import cluster as spark_cluster
from stack import services
from tests.conftest import ROOT, TEST_STATE
from testkit.harness import BIN, WAIT_S, RunProcess, wait_until
from testkit.invoices import DEMO, invoices_project
from zync import topics

ZYNC_APP = "zync (cluster)"
BATCHES = (1, 2)  # the demo batches fed through the cluster (see above)
DATABASE_TABLES = 20  # a database's tables, each a topic of Debezium's shape, one pattern entry mirrors them
SHORT_TABLES = 3  # the suite's short run: a database of this few tables


def database_mirrors(database: str) -> str:
    """One pattern entry mirroring every table of `database` (topics `<database>.public.<table>`)."""
    return f"""
mirrors:
  - topics: '{database}\\.public\\..*'
    name: '{database}_{{table}}'
"""


@contextlib.contextmanager
def thrift(cluster_target):
    """A cursor on the cluster's Thrift Server, as dbt's Thrift connections have."""
    connection = hive.connect(host="127.0.0.1", port=spark_cluster.thrift_port(cluster_target), username="zync")
    try:
        yield connection.cursor()
    finally:
        connection.close()


def query(cluster_target, sql: str) -> list[tuple]:
    with thrift(cluster_target) as cursor:
        cursor.execute(sql)
        return [tuple(row) for row in cursor.fetchall()]


def database_changes(table: int) -> list[tuple[str, int, str | None]]:
    """Table `table`'s changes: a snapshot of three rows, an update, a delete and an insert."""
    return [("r", 1, f"ann{table}"), ("r", 2, f"bob{table}"), ("r", 3, f"cy{table}"), ("u", 2, f"bo{table}"),
            ("d", 3, None), ("c", 4, f"di{table}")]


def produce_database(target, database: str = "clusterdb", tables: int = DATABASE_TABLES
                     ) -> dict[str, set[tuple[int, str]]]:
    """The tables' changes, as Debezium writes them; {mirror: its rows after them}."""
    expected = {}
    for table in range(1, tables + 1):
        records, rows = [], {}
        for op, key, customer in database_changes(table):
            row = {"ID": key, "customer": customer, "item": f"item{key}"}
            records.append({"key": {"ID": key}, "value": {
                "before": rows.get(key) if op == "d" else None, "after": None if op == "d" else row, "op": op,
                "ts_ms": None}})
            if op == "d":
                rows.pop(key)
            else:
                rows[key] = row
        topics.produce(target, f"{database}.public.t{table:02d}", records, DEMO / "schemas" / "Invoices-key.avsc",
                       DEMO / "schemas" / "Invoices-value.avsc")
        expected[f"{database}_t{table:02d}"] = {(row["ID"], row["customer"]) for row in rows.values()}
    return expected


def mirrored(cluster_target, schema: str, names) -> dict[str, set[tuple[int, str]]]:
    """Each mirror's live rows, read through the Thrift Server."""
    union = " union all ".join(f"select '{name}' as mirror, ID, customer from {schema}.{name}" for name in sorted(names))
    found: dict[str, set[tuple[int, str]]] = {name: set() for name in names}
    for name, key, customer in query(cluster_target, union):
        found[name].add((key, customer))
    return found


def models_run(run: RunProcess) -> set[str]:
    """The models `zync run` ran without failure, from its log's stage lines."""
    stages = [json.loads(line) for line in run.log.read_text().splitlines() if line.startswith("{")]
    return {model for stage in stages if stage.get("stage") == "dbt" for model in stage.get("models", [])
            if model not in stage.get("failed", [])}


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


def test_zync_up_cluster_runs_a_master_two_workers_of_their_own_and_the_thrift_server_on_loopback(cluster, target):
    names = [service.name for service in spark_cluster.services()]
    lines = services.status(target, cluster=True)
    for name in names:
        assert any(line.startswith(f"{name}: up on 127.0.0.1:") for line in lines), lines
    state = master_state(cluster)
    assert [w["host"] for w in state["workers"] if w["state"] == "ALIVE"] == ["127.0.0.1"] * 2
    thrift_apps = [a for a in state["activeapps"] if a["name"] == spark_cluster.THRIFT_SERVER_NAME]
    assert len(thrift_apps) == 1 and thrift_apps[0]["cores"] > 0, state["activeapps"]

    # Each worker's root, seen through its own /proc entry: the project (its state folder and Python
    # environment inside) is an empty folder there; the worker's own folder is whole.
    own_root = spark_cluster.own_root()
    assert own_root is not None and not own_root.is_relative_to(ROOT)
    workers = [service for service in spark_cluster.services() if service.name.startswith("spark-worker")]
    assert len(workers) == 2
    for worker in workers:
        pid = worker.pid()
        assert pid is not None
        assert (ROOT / "README.md").exists()
        assert os.listdir(f"/proc/{pid}/root{ROOT}") == [], f"{worker.name} sees the project's files"
        assert Path(f"/proc/{pid}/root{TEST_STATE}").exists() is False
        assert (Path(f"/proc/{pid}/root{own_root}") / "spark" / "jars").is_dir()

    # An executor asked to open a driver's file cannot: the Thrift Server's driver finds the file, the
    # task on a worker does not.
    with pytest.raises(hive.OperationalError, match="FileNotFound|does not exist|No such file"):
        query(cluster, f"select count(*) from text.`file:{ROOT / 'README.md'}`")


def test_zync_run_once_on_the_cluster_gives_the_first_batch_and_mirrors_a_small_database(cluster, cluster_env, target):
    """The suite's short run of the flow below: `zync run --once --target cluster` over the demo's first
    batch and a database of a few tables; the output topic and the mirrors, read through the Thrift
    Server, are exact."""
    schema = cluster_env["ZYNC_SCHEMA"]
    project = invoices_project(TEST_STATE / f"cluster-{uuid.uuid4().hex[:6]}", "Short")
    (project.path / "transforms" / "shortdb.yml").write_text(database_mirrors("shortdb"))
    database = produce_database(target, "shortdb", SHORT_TABLES)
    project.produce_batch(target, 1)
    run = RunProcess(project, project.path / "zync-run.log", target="cluster", options=("--once",))
    try:
        assert run.process.wait(WAIT_S) == 0, run.log.read_text()[-3000:]
    finally:
        if run.process.poll() is None:
            run.kill()
    assert project.published(target) == project.expected(1)
    assert mirrored(cluster, schema, database) == database
    location = query(cluster, f"describe detail {schema}.{project.name('raw_invoices')}")[0][4]
    assert location.startswith(f"{cluster_env['ZYNC_WAREHOUSE']}/{schema}.db/"), location


@pytest.mark.campaign
def test_the_invoices_demo_and_a_database_flow_on_the_cluster_while_dbt_test_runs_through_the_thrift_server(
        cluster, cluster_env, target):
    schema = cluster_env["ZYNC_SCHEMA"]
    # The project where the workers see nothing: in the (hidden) state folder.
    project = invoices_project(TEST_STATE / f"cluster-{uuid.uuid4().hex[:6]}", "Cluster")
    (project.path / "transforms" / "clusterdb.yml").write_text(database_mirrors("clusterdb"))
    database = produce_database(target)
    run = RunProcess(project, project.path / "zync-run.log", target="cluster")
    status = None
    try:
        for batch in BATCHES:
            project.produce_batch(target, batch)
        want = project.expected(BATCHES[-1])
        wait_until(lambda: project.published_count(target) >= len(want), "the batches' output", run)
        assert project.published(target) == want
        # Every table's mirror built by the run; three of them read back row by row (a Thrift Server
        # that has just started takes seconds to plan each mirror's first read: all 20 took minutes).
        wait_until(lambda: set(database) <= models_run(run), "the database's 20 mirrors", run)
        sample = {name: database[name] for name in ("clusterdb_t01", "clusterdb_t10", "clusterdb_t20")}
        assert mirrored(cluster, schema, sample) == sample
        # The running zync is an application of the cluster, granted executors on the workers.
        apps = [a for a in master_state(cluster)["activeapps"] if a["name"] == ZYNC_APP]
        assert len(apps) == 1 and apps[0]["cores"] > 0, master_state(cluster)["activeapps"]
        app_id = apps[0]["id"]

        # `zync etl status` on the cluster: an application of its own, started now so that its JVM's
        # start overlaps the data tests and the checks below; it only reads, and everything it reports
        # on is published by now.
        status = subprocess.Popen([str(BIN / "zync"), "etl", "status", "--target", "cluster"], cwd=project.path,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "ZYNC_PROJECT_DIR": str(project.path)})
        # The demo's models and one of the database's mirrors (each of the 20 has the same tests, and
        # through a Thrift Server on two cores each test is a few seconds).
        tested = dbtRunner().invoke(["test", "--select", project.name("new_invoices"), project.name("invoices_mirror"),
                                     "clusterdb_t01", "--project-dir", str(project.path), "--profiles-dir",
                                     str(project.path / "profiles"), "--target", "cluster"])
        assert tested.success, tested.exception or tested.result
        tested_models = {node for result in tested.result.results for node in result.node.depends_on.nodes}
        assert {f"model.zync.{name}" for name in (project.name("new_invoices"), project.name("invoices_mirror"),
                                                  "clusterdb_t01")} <= tested_models, tested_models
        assert run.terminate() == 0

        # The executors on the workers ran the application's tasks (each worker keeps its executors'
        # logs), on paths of their own: no log names the driver's project.
        logs = [log for index in range(2) for log in (spark_cluster.worker_dir(index) / app_id).glob("*/stderr")]
        assert logs and any("Running task" in log.read_text() for log in logs), logs
        for log in logs:
            assert str(ROOT) not in log.read_text(), log

        # Every table is on the S3 server.
        for table in (project.name("raw_invoices"), project.name("new_invoices")):
            location = query(cluster, f"describe detail {schema}.{table}")[0][4]
            assert location.startswith(f"{cluster_env['ZYNC_WAREHOUSE']}/{schema}.db/"), location

        # An analyst's `dbt run` of the output through the Thrift Server: the model's statements without a
        # result set (CACHE TABLE, DROP VIEW, RESET) go through PyHive too; with nothing it can take
        # (every record done but Dan's invoice, still waiting for its status) it writes nothing.
        output = f"{schema}.{project.name('new_invoices')}"
        version_before = query(cluster, f"describe history {output} limit 1")[0][0]
        ran = dbtRunner().invoke(["run", "--select", project.name("new_invoices"),
                                  "--project-dir", str(project.path),
                                  "--profiles-dir", str(project.path / "profiles"), "--target", "cluster"])
        assert ran.success, ran.exception or ran.result
        assert query(cluster, f"describe history {output} limit 1")[0][0] == version_before

        mirror = query(cluster, f"select invoice_id, customer, item from {schema}.{project.name('invoices_mirror')} "
                                "where not coalesce(_zync_deleted, false)")
        assert set(mirror) == expected_mirror()

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
