"""One SparkSession for zync's jobs, configured from the same dbt target as `dbt run`."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from zync.config import Target
from zync.errors import ZyncError


class MetastoreLockedError(ZyncError):
    """The embedded Derby metastore is held by another process."""


LOCK_WAIT_S = 30.0


def _check_derby_free(metastore: Path, wait_s: float = LOCK_WAIT_S) -> None:
    """Fail early and clearly if another JVM holds the embedded Derby metastore.

    Derby locks `dbex.lck` with a POSIX lock while a process has the database
    booted; taking the same lock here tells whether it is free without
    starting a JVM that would fail with a screen of Hive errors.
    """
    lock_file = metastore / "dbex.lck"
    # The JVM of a pyspark process that just exited lets go a moment later, so
    # a lock is waited out for a while before it counts as held.
    deadline = time.monotonic() + wait_s
    while lock_file.exists():
        with open(lock_file, "a") as f:
            try:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.lockf(f, fcntl.LOCK_UN)
                return
            except OSError:
                if time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
            raise MetastoreLockedError(
                f"the Spark metastore {metastore} is in use by another process (a `dbt run` or "
                "another zync job). The embedded Derby metastore admits one process at a time: "
                "wait for that process to finish and run this again, or use a target with a "
                "shared metastore (--target cluster)."
            ) from None


def spark_session(target: Target):  # -> pyspark.sql.SparkSession (imported lazily: it is slow)
    """The active session if there is one (tests, dbt in-process), else a new one for the target."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if target.dbt_output.get("method") != "session":
        raise ZyncError(
            f"target {target.name!r} uses dbt method {target.dbt_output.get('method')!r}; zync's jobs "
            "run Spark in-process, so submit them to the cluster with spark-submit and ZYNC_TARGET set"
        )
    if target.derby_metastore is not None:
        target.derby_metastore.parent.mkdir(parents=True, exist_ok=True)
        _check_derby_free(target.derby_metastore)
    # The local target is loopback only, like the embedded services.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName("zync").enableHiveSupport()
    for key, value in target.spark_conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
