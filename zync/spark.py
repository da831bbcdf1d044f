"""One SparkSession for zync's jobs, configured from the same dbt target as `dbt run`."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from zync.config import Target, derby_address, metastore_service_address, project_path
from zync.errors import ZyncError
from zync.spark_internals import import_named_per_call


class CatalogDownError(ZyncError):
    """The target's catalog server does not accept connections."""


def catalog_answers(host: str, port: int) -> bool:
    """Whether the catalog's Derby server accepts connections (it listens once it is ready)."""
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def check_catalog(spark_conf: dict[str, Any]) -> None:
    """Fail early and clearly when the shared catalog of these Spark settings (the metastore service,
    else Derby's server; neither: nothing to check) is not running.

    Without this, Spark's Hive client retries for half a minute and then fails
    with "Unable to instantiate SessionHiveMetaStoreClient", naming neither
    the address nor the remedy.
    """
    service = metastore_service_address(spark_conf)
    if service is not None:
        if not catalog_answers(*service):
            host, port = service
            raise CatalogDownError(
                f"the metastore service at {host}:{port} (ZYNC_METASTORE_URI) does not answer: run "
                "`zync up --metastore`, or unset ZYNC_METASTORE_URI to use the embedded catalog")
        return
    address = derby_address(spark_conf)
    if address is not None and not catalog_answers(*address):
        host, port = address
        raise CatalogDownError(f"the catalog at {host}:{port} does not answer: run `zync up`")


def spark_session(target: Target):  # -> pyspark.sql.SparkSession (imported lazily: it is slow)
    """The active session if there is one (tests, dbt in-process), else a new one for the target."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        import_named_per_call(active)
        return active
    if target.spark_output.get("method") != "session":
        raise ZyncError(
            f"target {target.name!r}: zync's jobs run a Spark driver in this process, but dbt output "
            f"{target.spark_output_name!r} uses method {target.spark_output.get('method')!r}; give the target's "
            "profiles/zync.yml entry a `spark_target:` naming an output with `method: session` (its "
            "server_side_parameters may set spark.master to a cluster's master)"
        )
    check_catalog(target.spark_conf)
    # The embedded services and the local cluster are loopback only.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(f"zync ({target.name})").enableHiveSupport()
    conf = target.spark_conf
    if conf.get("spark.master", "local").startswith("spark://"):
        # Client mode on a standalone cluster: executors that run Python run this interpreter, which
        # holds zync's packages (the workers share this machine's file system, as docs/scaling-out.md says).
        conf.setdefault("spark.pyspark.python", sys.executable)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import_named_per_call(spark)
    check_warehouse(spark, target)
    return spark


WAREHOUSE_ENV = "ZYNC_WAREHOUSE"


def check_warehouse(spark, target: Target) -> None:
    """Stop before writing when $ZYNC_WAREHOUSE names a warehouse the target's database is not in.

    A database lives where it was made: with the warehouse moved (to an object store, say), tables
    would still be made in the database's old folder, silently. A database made elsewhere on
    purpose (`create database ... location`) is the user's choice only without the variable.
    """
    wanted = os.environ.get(WAREHOUSE_ENV, "").strip().rstrip("/")
    if not wanted:
        return
    try:
        where = str(spark.catalog.getDatabase(target.schema).locationUri).rstrip("/")
    except Exception:  # noqa: BLE001 - no such database yet: it is made in the warehouse
        return
    prefix = wanted if "://" in wanted else f"file:{project_path(wanted.removeprefix('file:'))}"
    if not (where + "/").startswith(prefix + "/"):
        raise ZyncError(f"database {target.schema!r} is at {where}, not in the warehouse ${WAREHOUSE_ENV} names "
                        f"({os.environ[WAREHOUSE_ENV]}): its tables would stay where it is. Give the new "
                        "warehouse a database of its own (ZYNC_SCHEMA) or a catalog of its own (ZYNC_STATE_DIR), "
                        "or unset ZYNC_WAREHOUSE")


@contextmanager
def session_conf(spark, settings: dict[str, str]) -> Iterator[None]:
    """Spark SQL settings for the block, each put back as it was (unset if it was) afterwards.

    For the settings one step of zync needs and the rest of the session must
    not see (a cycle's stages share one session with whatever runs next).
    """
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)

