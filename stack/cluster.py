"""The Spark cluster `zync up --cluster` starts on this machine: a standalone master, one worker and the
Spark Thrift Server as an application on that master.

Everything comes from the PySpark wheel (`spark-class`, `spark-submit` and its jars): no other Spark
download. The Thrift Server runs with the Spark settings of the `cluster` target's jobs (profiles.yml
`cluster-jobs`: Delta, the jars shipped to executors, the shared catalog, the warehouse), so dbt through
it and zync's own applications see and write the same tables. Everything listens on 127.0.0.1 only,
web UIs included (SPARK_LOCAL_IP), with logs and the worker's folder under <state>/spark-*.

Ports: the master's from the cluster target's `spark.master` ($ZYNC_SPARK_MASTER_PORT, default 17077),
the worker's next to it (+1), the master's and worker's web UIs at +3 and +4 (the master's JSON at
http://127.0.0.1:<+3>/json/ lists workers and applications); the Thrift Server's from the dbt output
`cluster` ($ZYNC_THRIFT_PORT, default 10000).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any
from urllib.request import urlopen

from stack.processes import Service
from zync.config import Target, load_target, state_dir
from zync.errors import ZyncError

LOOPBACK = "127.0.0.1"
CLUSTER_TARGET = "cluster"
WORKER_CORES = 4  # more than this machine's 2: the applications mostly wait on Kafka, Delta and each other
WORKER_MEMORY = "6g"
DAEMON_MEMORY = "512m"
THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
THRIFT_SERVER_NAME = "zync thrift server"


# The services' names (and their folders under the state folder), in start order.
SERVICE_NAMES = ("spark-master", "spark-worker", "thrift-server")


def spark_home() -> Path:
    import pyspark  # only where the cluster is used: it is not a light import

    return Path(pyspark.__file__).parent


def master_address(target: Target) -> tuple[str, int]:
    """(host, port) of the cluster target's standalone master, from its `spark.master`."""
    master = target.spark_conf.get("spark.master", "")
    if not master.startswith("spark://"):
        raise ZyncError(f"target {target.name!r}: spark.master is {master!r}, not a standalone master "
                        "(spark://HOST:PORT)")
    host, _, port = master[len("spark://"):].rpartition(":")
    if not port.isdigit():
        raise ZyncError(f"target {target.name!r}: spark.master {master!r} names no port")
    return host, int(port)


def master_ui_port(master_port: int) -> int:
    return master_port + 3


def thrift_port(target: Target) -> int:
    return int(target.dbt_output.get("port", 10000))


def worker_dir() -> Path:
    """The worker's folder: a folder per application, a folder per executor in it (its stdout/stderr)."""
    return state_dir() / "spark-worker" / "work"


def master_json(master_port: int, timeout_s: float = 2.0) -> dict[str, Any] | None:
    """The master's own account of its workers and applications (its web UI's /json/), or None."""
    try:
        with urlopen(f"http://{LOOPBACK}:{master_ui_port(master_port)}/json/", timeout=timeout_s) as response:
            return json.load(response)
    except (OSError, ValueError):
        return None


def _env() -> dict[str, str]:
    return {"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": LOOPBACK, "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "SPARK_NO_DAEMONIZE": "1"}


def _loopback(target: Target) -> tuple[str, int]:
    host, port = master_address(target)
    if host not in (LOOPBACK, "localhost"):
        raise ZyncError(f"`zync up --cluster` starts a cluster on loopback only, but target {target.name!r} "
                        f"points at spark://{host}:{port}; start your own cluster there instead")
    return host, port


def services() -> list[Service]:
    """The master, the worker and the Thrift Server, configured from the `cluster` target, in start order."""
    target = load_target(CLUSTER_TARGET)
    _, port = _loopback(target)
    master_url = f"spark://{LOOPBACK}:{port}"
    spark_class = str(spark_home() / "bin" / "spark-class")

    def alive_workers() -> int:
        state = master_json(port) or {}
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    master = Service(
        name=SERVICE_NAMES[0], port=port, cwd=state_dir(),
        command=[spark_class, "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                 "--port", str(port), "--webui-port", str(master_ui_port(port))],
        env=_env(), ready=lambda: (master_json(port) or {}).get("status") == "ALIVE",
        env_var="ZYNC_SPARK_MASTER_PORT",
    )
    work = worker_dir()
    worker = Service(
        name=SERVICE_NAMES[1], port=port + 1, cwd=state_dir(),
        command=[spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host", LOOPBACK,
                 "--port", str(port + 1), "--webui-port", str(port + 4), "--cores", str(WORKER_CORES),
                 "--memory", WORKER_MEMORY, "--work-dir", str(work)],
        env=_env(), ready=lambda: alive_workers() > 0, prepare=lambda: work.mkdir(parents=True, exist_ok=True),
        env_var="ZYNC_SPARK_MASTER_PORT", data=work,
    )
    thrift = thrift_port(target)
    conf = {key: value for key, value in target.spark_conf.items() if key != "spark.master"}
    # The Thrift Server runs statements in threads whose class loader does not see `spark.jars` (Delta's
    # classes went missing there: ClassNotFoundException DeltaTableUtils$); on the driver's own class
    # path they are seen everywhere. Executors still get them through spark.jars.
    driver_path = [p for p in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if p]
    driver_path += [jar for jar in conf.get("spark.jars", "").split(",") if jar]
    conf["spark.driver.extraClassPath"] = os.pathsep.join(driver_path)
    thrift_server = Service(
        name=SERVICE_NAMES[2], port=thrift, cwd=state_dir(),
        command=[str(spark_home() / "bin" / "spark-submit"), "--master", master_url,
                 "--class", THRIFT_SERVER_CLASS, "--name", THRIFT_SERVER_NAME,
                 *[part for key, value in conf.items() for part in ("--conf", f"{key}={value}")],
                 "spark-internal",
                 "--hiveconf", f"hive.server2.thrift.port={thrift}",
                 "--hiveconf", f"hive.server2.thrift.bind.host={LOOPBACK}"],
        env=_env(), ready=lambda: _listens(thrift), env_var="ZYNC_THRIFT_PORT",
    )
    return [master, worker, thrift_server]


def _listens(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=2):
            return True
    except OSError:
        return False


def applications(target: Target) -> list[dict[str, Any]]:
    """The applications the target's master runs now (name, id, cores), from its JSON endpoint."""
    _, port = master_address(target)
    state = master_json(port)
    if state is None:
        raise ZyncError(f"the Spark master's web UI at {LOOPBACK}:{master_ui_port(port)} does not answer: "
                        "run `zync up --cluster`")
    return list(state.get("activeapps", []))


def check_master(target: Target) -> None:
    """Fail early when the target's standalone master on loopback is down (Spark would retry for a minute)."""
    host, port = master_address(target)
    if host in (LOOPBACK, "localhost") and not _listens(port):
        raise ZyncError(f"the Spark master at spark://{host}:{port} does not answer: run `zync up --cluster` "
                        "(or start your cluster)")

