"""One broker, one registry, one catalog and one SparkSession for the whole test session.

The tests get their own state folder and ports, so they never touch the
demo's data. dbt runs in-process (sharing the test session's SparkSession,
which saves a JVM per run); other processes (tests/catalog/) reach the same
tables through the shared catalog.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_STATE = ROOT / ".local" / "test-state"

# Set before anything reads the profiles.
os.environ["ZYNC_PROJECT_DIR"] = str(ROOT)
os.environ["ZYNC_STATE_DIR"] = str(TEST_STATE)
os.environ.setdefault("ZYNC_KAFKA_PORT", "29092")
os.environ.setdefault("ZYNC_REGISTRY_PORT", "28081")
# PostgreSQL and Kafka Connect (tests/debezium), away from a user's own `zync up --connect`.
os.environ.setdefault("ZYNC_POSTGRES_PORT", "25432")
os.environ.setdefault("ZYNC_CONNECT_PORT", "28083")
# The shared catalog (Derby's network server) of the test session.
os.environ.setdefault("ZYNC_CATALOG_PORT", "21527")
# The catalog as a service (tests/catalog/test_metastore_service.py, tests/cluster), started by the tests that use it.
os.environ.setdefault("ZYNC_METASTORE_PORT", "29083")
# The local Spark cluster (tests/cluster): master (+1 worker, +3/+4 web UIs) and Thrift Server.
os.environ.setdefault("ZYNC_SPARK_MASTER_PORT", "27077")
os.environ.setdefault("ZYNC_THRIFT_PORT", "20000")
# The S3-compatible server of the object-storage tests, and the settings every Spark session and
# Python client of the suite reach it with (the warehouse itself stays local: a test puts a table on
# the store by its location, or runs a process with ZYNC_WAREHOUSE).
os.environ.setdefault("ZYNC_S3_PORT", "29000")
from stack import s3 as _s3  # noqa: E402 - reads the variables above

for _name, _value in _s3.environment().items():
    if _name != "ZYNC_WAREHOUSE":
        os.environ.setdefault(_name, _value)
os.environ["ZYNC_TARGET"] = "local"
# The invoices demo's models are the suite's subjects; a user's run leaves them off (test_user_project).
os.environ["ZYNC_DEMO"] = "true"


@pytest.fixture(scope="session")
def target():
    from stack import services
    from zync.config import load_target

    target = load_target("local")
    services.purge(target)
    # Private, as a state folder below /root or a `mktemp -d` folder is: whatever runs as another
    # user (PostgreSQL, when the suite runs as root) must not need to enter it.
    TEST_STATE.mkdir(mode=0o700, parents=True)
    TEST_STATE.chmod(0o700)
    services.up(target)
    yield target
    services.down(target)


@pytest.fixture(scope="session")
def spark(target):
    from zync.spark import spark_session

    session = spark_session(target)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dbt(spark):
    """Run dbt in this process; returns the dbtRunnerResult and fails on an unsuccessful run."""
    from dbt.cli.main import dbtRunner

    def run(*args: str, expect_success: bool = True):
        os.chdir(ROOT)
        result = dbtRunner().invoke([*args, "--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles")])
        if expect_success and not result.success:
            raise AssertionError(f"dbt {' '.join(args)} failed: {result.exception or result.result}")
        return result

    return run


@pytest.fixture(scope="session")
def object_store(target):
    """The S3-compatible server, started once for the tests that need it; the URI of a folder of the
    suite's own on it (s3a://zync/suite-<id>)."""
    import uuid

    from stack import services

    services.up(target, only={_s3.NAME}, object_store=True)
    return f"s3a://{_s3.BUCKET}/suite-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def catalog_service(target):
    """The catalog as a service (Hive's metastore on PostgreSQL, `zync up --metastore`), started once for
    the tests that use it (tests/catalog/test_metastore_service.py, tests/cluster): its URI. It stops at
    the session's end, PostgreSQL with it when it was started here (tests/debezium may run it already)."""
    from stack import metastore, postgres, services

    started = {metastore.NAME} | ({"postgres"} if postgres.service().pid() is None else set())
    services.up(target, metastore=True, only=started)
    yield metastore.uri()
    services.down(target, only=started)


@pytest.fixture(params=["local", "s3"])
def table_home(request, tmp_path):
    """Where a test's tables live: a local folder, then the S3 server (each test runs on both)."""
    if request.param == "local":
        return str(tmp_path)
    import uuid

    return f"{request.getfixturevalue('object_store')}/{uuid.uuid4().hex[:8]}"
