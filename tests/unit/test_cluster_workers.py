"""The local cluster's workers: their names and ports, and what a worker of its own is kept from.

The cluster itself, started and used, is tests/cluster/; these are the rules `zync up --cluster` builds
its workers by, on their own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stack import cluster
from zync.errors import ZyncError


def test_workers_have_names_and_ports_of_their_own_the_first_as_before():
    assert [cluster.worker_name(i) for i in range(3)] == ["spark-worker", "spark-worker-2", "spark-worker-3"]
    ports = [port for index in range(4) for port in cluster.worker_ports(17077, index)]
    assert cluster.worker_ports(17077, 0) == (17078, 17081)
    # No worker's ports meet another's, the master's (17077) or the master's web UI (17080).
    assert len(set(ports)) == len(ports) and not {17077, 17080} & set(ports)


@pytest.mark.parametrize("value", ["0", "-1", "two", ""])
def test_a_worker_count_that_is_not_a_positive_number_is_refused(monkeypatch, value):
    monkeypatch.setenv(cluster.WORKERS_ENV, value)
    with pytest.raises(ZyncError, match=cluster.WORKERS_ENV):
        cluster.worker_count()


def test_the_driver_folders_hidden_from_a_worker_are_each_hidden_once(monkeypatch, tmp_path):
    project = tmp_path / "project"
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(project))
    monkeypatch.setenv("ZYNC_STATE_DIR", str(project / ".local" / "state"))
    hidden = cluster.hidden_from_workers()
    # The state folder goes with the project it is in; the Python environment is hidden too.
    assert project.resolve() in hidden
    assert any(Path(sys.prefix).resolve().is_relative_to(folder) for folder in hidden)
    assert not any(inner != outer and inner.is_relative_to(outer) for inner in hidden for outer in hidden)


def test_a_worker_root_inside_a_hidden_folder_or_a_local_warehouse_is_refused(monkeypatch, tmp_path):
    project = tmp_path / "project"
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(project))
    monkeypatch.setenv("ZYNC_STATE_DIR", str(project / ".local" / "state"))
    on_s3 = type("T", (), {"spark_conf": {"spark.sql.warehouse.dir": "s3a://bucket/warehouse"}})()
    with pytest.raises(ZyncError, match="outside the project"):
        cluster._check_own_root(project / "workers", on_s3)
    local = type("T", (), {"spark_conf": {"spark.sql.warehouse.dir": str(project / "warehouse")}})()
    with pytest.raises(ZyncError, match="object store"):
        cluster._check_own_root(tmp_path / "workers", local)
    cluster._check_own_root(tmp_path / "workers", on_s3)


def test_a_command_in_a_root_of_its_own_sees_the_hidden_folders_empty(monkeypatch, tmp_path):
    project = tmp_path / "project"
    (project / "secret").mkdir(parents=True)
    (project / "secret" / "file").write_text("the driver's")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file").write_text("the worker's")
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(project))
    monkeypatch.setenv("ZYNC_STATE_DIR", str(project / ".local" / "state"))
    seen = subprocess.run(cluster._in_own_root(["sh", "-c", f"ls -A {project}; cat {outside / 'file'}"]),
                          capture_output=True, text=True, timeout=30)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout == "the worker's"


def test_a_purge_removes_the_workers_folder_only_when_zync_made_it(monkeypatch, tmp_path):
    someone_elses = tmp_path / "theirs"
    (someone_elses / "spark").mkdir(parents=True)
    monkeypatch.setenv(cluster.WORKER_ROOT_ENV, str(someone_elses))
    assert cluster.remove_own_root() is None and someone_elses.is_dir()
    ours = tmp_path / "ours"
    (ours / "spark").mkdir(parents=True)
    (ours / "spark" / ".from").write_text("/the/pyspark")
    (ours / "credentials.aws_shared_credentials_file").write_text("[default]\n")
    monkeypatch.setenv(cluster.WORKER_ROOT_ENV, str(ours))
    assert cluster.remove_own_root() == ours.resolve() and not ours.exists()


def test_a_system_python_and_the_tools_workers_run_with_stay_in_sight(monkeypatch, tmp_path):
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.setenv("ZYNC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)  # zync installed in the system's Python
    assert set(cluster.hidden_from_workers()) == {(tmp_path / "project").resolve(), (tmp_path / "state").resolve()}
    java_home = tmp_path / "project" / "jdk"
    java_home.mkdir(parents=True)
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    with pytest.raises(ZyncError, match="holds the tools they run"):
        cluster.hidden_from_workers()
