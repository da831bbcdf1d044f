"""One SparkSession for zync's jobs, configured from the same dbt target as `dbt run`."""

from __future__ import annotations

import os

from zync.config import Target
from zync.errors import ZyncError


class CatalogDownError(ZyncError):
    """The target's catalog server does not accept connections."""


def check_catalog(address: tuple[str, int] | None) -> None:
    """Fail early and clearly when the shared catalog at `address` (None: no catalog server) is not running.

    Without this, Spark's Hive client retries for half a minute and then fails
    with "Unable to instantiate SessionHiveMetaStoreClient", naming neither
    the address nor the remedy.
    """
    from zync.services import catalog_answers

    if address is not None and not catalog_answers(*address):
        host, port = address
        raise CatalogDownError(f"the catalog at {host}:{port} does not answer: run `zync up`")


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
    check_catalog(target.catalog_address)
    # The local target is loopback only, like the embedded services.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName("zync").enableHiveSupport()
    for key, value in target.spark_conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
