"""The catalog as a service: Hive's metastore over Thrift, its database in PostgreSQL (`zync up --metastore`).

The service starts once for the session (tests/cluster uses it too), beside the suite's own catalog (Derby's server, which the
test session's SparkSession keeps using). Spark processes on the service are real ones of their own
(tests/catalog/metastore_process.py), with ZYNC_METASTORE_URI set, as a user sets it. A JVM start
costs most of a minute here, so the checks are gathered into two such processes, the service
restarted between them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from stack import metastore, postgres, services

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"


@pytest.fixture(scope="module")
def service(catalog_service):
    # Started once for the session: tests/cluster's catalog service is the same one.
    return catalog_service


def spark_process(uri: str, *args: str) -> dict:
    """Run tests/catalog/metastore_process.py on the service at `uri`; its JSON line."""
    result = subprocess.run([str(BIN / "python"), "-m", "tests.catalog.metastore_process", *args],
                            env={**os.environ, "ZYNC_METASTORE_URI": uri}, cwd=ROOT,
                            capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def catalog_rows(sql: str) -> list[dict]:
    """Rows of the service's own database, as PostgreSQL holds them."""
    return postgres.query(sql, database=metastore.DATABASE)


def tables_in(schema: str) -> dict[str, str]:
    """{table: type} of one database, read in PostgreSQL: where the service keeps its catalog."""
    return {r["TBL_NAME"]: r["TBL_TYPE"] for r in catalog_rows(
        'select t."TBL_NAME", t."TBL_TYPE" from "TBLS" t join "DBS" d on d."DB_ID" = t."DB_ID" '
        f"where d.\"NAME\" = '{schema}'")}


def dbt_project(folder: Path, schema: str, model: str) -> Path:
    """A dbt project of one Delta model over the table the first process made, with two data tests."""
    (folder / "models").mkdir(parents=True)
    (folder / "dbt_project.yml").write_text(
        "name: metastore_service\nversion: '1.0'\nconfig-version: 2\nprofile: zync\n"
        "models:\n  metastore_service:\n    +materialized: table\n    +file_format: delta\n")
    (folder / "models" / f"{model}.sql").write_text(f"select id, name from {schema}.t where id < 4\n")
    (folder / "models" / "schema.yml").write_text(
        f"version: 2\nmodels:\n  - name: {model}\n    columns:\n      - name: id\n"
        "        data_tests: [not_null, unique]\n")
    return folder


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as the kernel lists them) of the sockets listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_the_service_listens_on_loopback_only_with_its_config_private(target, service):
    line = next(line for line in services.status(target) if line.startswith(f"{metastore.NAME}:"))
    assert f"up on 127.0.0.1:{os.environ['ZYNC_METASTORE_PORT']}" in line
    # 127.0.0.1, or the same as an IPv4-mapped IPv6 address; Hive's own main listens on every address.
    assert listening_addresses(metastore.port()) <= {"0100007F", "0000000000000000FFFF00000100007F"}
    assert listening_addresses(metastore.port())
    site = metastore.folder() / "conf" / "hive-site.xml"
    assert site.stat().st_mode & 0o077 == 0  # it holds the database password
    assert f"<value>{target.spark_conf['spark.sql.warehouse.dir']}</value>" in site.read_text()


def test_tables_and_views_one_process_makes_another_uses_after_a_restart(target, service, tmp_path):
    schema = f"metastore_{uuid.uuid4().hex[:8]}"
    model = f"ids_{schema}"
    made = spark_process(
        service,
        "--sql", f"create database {schema}",
        "--sql", f"create table {schema}.t using delta as select id, concat('n', id) as name from range(5)",
        "--sql", f"create view {schema}.v as select name from {schema}.t where id >= 3",
        "--query", f"select count(*) from {schema}.t")
    assert made["metastore_uris"] == service
    assert made["session_catalog"] == "zync.catalog.OneLookupDeltaCatalog"
    assert made["rows"] == {f"select count(*) from {schema}.t": [[5]]}
    # In PostgreSQL, not in this session's Derby; the data in Spark's warehouse.
    assert tables_in(schema) == {"t": "MANAGED_TABLE", "v": "VIRTUAL_VIEW"}
    [location] = [r["LOCATION"] for r in catalog_rows(
        'select s."LOCATION" from "TBLS" t join "SDS" s on s."SD_ID" = t."SD_ID" '
        f"join \"DBS\" d on d.\"DB_ID\" = t.\"DB_ID\" where d.\"NAME\" = '{schema}' and t.\"TBL_NAME\" = 't'")]
    assert location == f"file:{target.spark_conf['spark.sql.warehouse.dir']}/{schema}.db/t"

    services.down(target, only={metastore.NAME})
    services.up(target, metastore=True, only={metastore.NAME})

    used = spark_process(
        service,
        "--query", f"select id, name from {schema}.t order by id",
        "--query", f"select name from {schema}.v order by name",
        "--dbt-project", str(dbt_project(tmp_path / "project", schema, model)),
        "--dbt", "run", "--dbt", "test")
    assert used["rows"][f"select id, name from {schema}.t order by id"] == [[i, f"n{i}"] for i in range(5)]
    assert used["rows"][f"select name from {schema}.v order by name"] == [["n3"], ["n4"]]
    assert used["dbt"]["run"] == {model: "success"}
    assert sorted(used["dbt"]["test"].values()) == ["pass", "pass"]
    assert tables_in("zync").get(model) == "MANAGED_TABLE"


def test_without_the_service_a_job_and_dbt_say_to_start_it():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "ZYNC_METASTORE_URI": f"thrift://127.0.0.1:{port}"}
    message = (f"the metastore service at 127.0.0.1:{port} (ZYNC_METASTORE_URI) does not answer: "
               "run `zync up --metastore`")
    for command in ([str(BIN / "zync"), "from-kafka", "--topic", "metastore_absent", "--exit-after", "1s"],
                    [str(BIN / "dbt"), "run", "--select", "new_invoices"]):
        started = time.monotonic()
        result = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode != 0
        assert message in result.stdout + result.stderr, (result.stdout + result.stderr)[-3000:]
        # Before starting Spark, whose Hive client would retry for minutes.
        assert time.monotonic() - started < 30
