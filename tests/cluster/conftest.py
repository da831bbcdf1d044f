"""A real Spark cluster for target `cluster`, as a cluster of other machines is: `zync up --cluster` once
for this package, with two workers of their own.

The workers ($ZYNC_SPARK_WORKER_ROOT) run in a root of their own where the project, its state folder and
its Python environment are empty folders: they share nothing with the drivers but the network. Every
table is on the S3 server ($ZYNC_WAREHOUSE) and in the catalog service on PostgreSQL
($ZYNC_METASTORE_URI), in a schema of the package's own. The standalone master, the workers and the
Spark Thrift Server run beside the session's broker and registry; they stop after the package (the
catalog service, started once for the session in tests/conftest.py, and the other services stay).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from stack import cluster as spark_cluster
from stack import metastore, services
from zync.config import Target, load_target


@pytest.fixture(scope="package")
def cluster_env(object_store) -> Iterator[dict[str, str]]:
    """The variables a user of such a cluster sets, set in this process for the package (its `zync`
    processes inherit them)."""
    # Outside the project, the state folder and the Python environment: the workers' own root.
    root = Path(tempfile.mkdtemp(prefix="zync-workers-"))
    env = {"ZYNC_WAREHOUSE": f"{object_store}/cluster-warehouse", "ZYNC_SCHEMA": f"zync_cluster_{uuid.uuid4().hex[:6]}",
           "ZYNC_METASTORE_URI": metastore.uri(), spark_cluster.WORKERS_ENV: "2",
           spark_cluster.WORKER_ROOT_ENV: str(root)}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    load_target.cache_clear()  # a target read before is rendered with the variables of then
    try:
        yield env
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        load_target.cache_clear()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="package")
def cluster(target, cluster_env, catalog_service) -> Iterator[Target]:
    services.up(target, cluster=True)
    names = {service.name for service in spark_cluster.services()}
    try:
        yield load_target("cluster")
    finally:
        services.down(target, only=names)
