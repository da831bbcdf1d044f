"""One SparkSession for zync's jobs, configured from the same dbt target as `dbt run`."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from zync.config import Target
from zync.errors import ZyncError


class CatalogDownError(ZyncError):
    """The target's catalog server does not accept connections."""


def catalog_answers(host: str, port: int) -> bool:
    """Whether the catalog's Derby server accepts connections (it listens once it is ready)."""
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def check_catalog(address: tuple[str, int] | None) -> None:
    """Fail early and clearly when the shared catalog at `address` (None: no catalog server) is not running.

    Without this, Spark's Hive client retries for half a minute and then fails
    with "Unable to instantiate SessionHiveMetaStoreClient", naming neither
    the address nor the remedy.
    """
    if address is not None and not catalog_answers(*address):
        host, port = address
        raise CatalogDownError(f"the catalog at {host}:{port} does not answer: run `zync up`")


def spark_session(target: Target):  # -> pyspark.sql.SparkSession (imported lazily: it is slow)
    """The active session if there is one (tests, dbt in-process), else a new one for the target."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if target.spark_output.get("method") != "session":
        raise ZyncError(
            f"target {target.name!r}: zync's jobs run a Spark driver in this process, but dbt output "
            f"{target.spark_output_name!r} uses method {target.spark_output.get('method')!r}; give the target's "
            "profiles/zync.yml entry a `spark_target:` naming an output with `method: session` (its "
            "server_side_parameters may set spark.master to a cluster's master)"
        )
    check_catalog(target.catalog_address)
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
    return spark


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



_SHARED_LOCK = threading.Lock()
_shared: dict[tuple[tuple[str, str], ...], list] = {}  # settings -> [blocks inside, what they replaced]


@contextmanager
def shared_session_conf(spark, settings: dict[str, str]) -> Iterator[None]:
    """session_conf for a block that several threads may be in at once, all wanting the same settings.

    `zync run` ingests several topics at once on its one session: each
    write sets its table's encoding settings around itself, and with plain
    session_conf one thread putting them back would take them from another's
    write under way. Here the first block in sets them and the last one out
    puts back what was there.
    """
    key = tuple(sorted(settings.items()))
    with _SHARED_LOCK:
        entry = _shared.get(key)
        if entry is None:
            entry = _shared[key] = [0, {name: spark.conf.get(name, None) for name in settings}]
            for name, value in settings.items():
                spark.conf.set(name, value)
        entry[0] += 1
    try:
        yield
    finally:
        with _SHARED_LOCK:
            entry[0] -= 1
            if entry[0] == 0:
                del _shared[key]
                for name, value in entry[1].items():
                    if value is None:
                        spark.conf.unset(name)
                    else:
                        spark.conf.set(name, value)
