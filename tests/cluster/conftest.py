"""A real Spark cluster for target `cluster`: `zync up --cluster` once for this package.

The standalone master, its worker and the Spark Thrift Server run beside the session's broker,
registry and catalog; they are stopped after the package (the other services stay).
"""

from __future__ import annotations

import pytest

from stack import cluster as spark_cluster
from stack import services
from zync.config import load_target

CLUSTER_SERVICES = set(spark_cluster.SERVICE_NAMES)


@pytest.fixture(scope="package")
def cluster(target):
    services.up(target, cluster=True)
    yield load_target("cluster")
    services.down(target, only=CLUSTER_SERVICES)
