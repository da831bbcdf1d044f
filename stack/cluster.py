"""The Spark cluster `zync up --cluster` starts on this machine: a standalone master, its workers
($ZYNC_SPARK_WORKERS, default one) and the Spark Thrift Server as an application on that master.

Everything comes from the PySpark wheel (`spark-class`, `spark-submit` and its jars): no other Spark
download. The Thrift Server runs with the Spark settings of the `cluster` target's jobs (profiles.yml
`cluster-jobs`: Delta, the jars shipped to executors, the shared catalog, the warehouse), so dbt through
it and zync's own applications see and write the same tables. Everything listens on 127.0.0.1 only,
web UIs included (SPARK_LOCAL_IP), with logs and the worker's folder under <state>/spark-*.

Ports: the master's from the cluster target's `spark.master` ($ZYNC_SPARK_MASTER_PORT, default 17077),
the first worker's next to it (+1), the master's and that worker's web UIs at +3 and +4 (the master's
JSON at http://127.0.0.1:<+3>/json/ lists workers and applications), worker n >= 2 at +2n+1 and its
web UI at +2n+2; the Thrift Server's from the dbt output `cluster` ($ZYNC_THRIFT_PORT, default 10000).

Workers of their own ($ZYNC_SPARK_WORKER_ROOT): each worker, and every executor it starts, runs in a
mount namespace of its own where the project folder, the state folder and the Python environment are
empty folders, with a Spark of its own (linked from the PySpark wheel's files) and its files under
that folder. They share nothing with the drivers but the network: the S3 store the warehouse is on,
the broker, the drivers' file servers (spark.jars). This is what a cluster of other machines is, on
one machine; it needs the warehouse on an object store (ZYNC_WAREHOUSE=s3a://...).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
from pathlib import Path
from typing import Any
from urllib.request import urlopen

from stack.processes import Service
from zync.config import Target, load_target, project_dir, state_dir
from zync.errors import ZyncError

LOOPBACK = "127.0.0.1"
CLUSTER_TARGET = "cluster"
WORKER_CORES = 4  # more than this machine's 2: the applications mostly wait on Kafka, Delta and each other
WORKER_MEMORY = "6g"
DAEMON_MEMORY = "512m"
THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
THRIFT_SERVER_NAME = "zync thrift server"


# The services' names (and their folders under the state folder), in start order; worker n >= 2 is
# `spark-worker-<n>` (worker_name).
SERVICE_NAMES = ("spark-master", "spark-worker", "thrift-server")
WORKERS_ENV = "ZYNC_SPARK_WORKERS"
WORKER_ROOT_ENV = "ZYNC_SPARK_WORKER_ROOT"
# What a worker of its own copies out of the driver's file system: what the AWS SDK reads.
CREDENTIAL_FILE_VARIABLES = ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CREDENTIAL_PROFILES_FILE")


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


def worker_name(index: int) -> str:
    """The service name of worker `index` (0-based): `spark-worker`, `spark-worker-2`, ..."""
    return SERVICE_NAMES[1] if index == 0 else f"{SERVICE_NAMES[1]}-{index + 1}"


def worker_ports(master_port: int, index: int) -> tuple[int, int]:
    """(port, web UI port) of worker `index`: the first at +1/+4 as ever, the others above the UIs."""
    return (master_port + 1, master_port + 4) if index == 0 else (master_port + 2 * index + 3, master_port + 2 * index + 4)


def worker_count() -> int:
    """The workers `zync up --cluster` starts: $ZYNC_SPARK_WORKERS, default 1."""
    value = os.environ.get(WORKERS_ENV, "1").strip()
    if not value.isdigit() or int(value) < 1:
        raise ZyncError(f"${WORKERS_ENV} is {value!r}: give the number of workers, 1 or more")
    return int(value)


def started_workers() -> int:
    """How many workers were ever started with this state folder (their folders), so that `zync down` and
    `zync status` find each one whatever $ZYNC_SPARK_WORKERS says now."""
    return sum(1 for folder in state_dir().glob(f"{SERVICE_NAMES[1]}*") if folder.is_dir())


def own_root() -> Path | None:
    """The folder workers of their own keep everything in ($ZYNC_SPARK_WORKER_ROOT), or None: workers
    that share the driver's file system."""
    value = os.environ.get(WORKER_ROOT_ENV, "").strip()
    return Path(value).expanduser().resolve() if value else None


def worker_dir(index: int = 0) -> Path:
    """A worker's folder of executors: a folder per application, a folder per executor in it (its stdout/stderr)."""
    root = own_root()
    return (root / worker_name(index) if root else state_dir() / worker_name(index)) / "work"


def hidden_from_workers() -> list[Path]:
    """The driver's folders a worker of its own sees empty: the project, the state folder and the Python
    environment (each once: a folder inside another is hidden with it)."""
    import sys

    candidates = {project_dir().resolve(), state_dir().resolve()}
    if sys.prefix != sys.base_prefix:  # a virtual environment: the system's own Python stays
        candidates.add(Path(sys.prefix).resolve())
    # What the workers run with (a shell, mount, java) must stay in sight, whatever holds a project.
    tools = (shutil.which("sh"), shutil.which("mount"), shutil.which("java"), os.environ.get("JAVA_HOME"))
    needed = [Path(tool).resolve() for tool in tools if tool]
    kept: list[Path] = []
    for folder in sorted(candidates, key=lambda p: len(p.parts)):
        if any(tool.is_relative_to(folder) for tool in needed):
            raise ZyncError(f"workers of their own would not see {folder}, which holds the tools they run "
                            f"({', '.join(str(t) for t in needed if t.is_relative_to(folder))}): keep the project, "
                            "the state folder and the Python environment apart from the system's folders")
        if not any(folder.is_relative_to(outer) for outer in kept):
            kept.append(folder)
    return kept


def _check_own_root(root: Path, target: Target) -> None:
    for hidden in hidden_from_workers():
        if root.is_relative_to(hidden) or hidden.is_relative_to(root):
            raise ZyncError(f"${WORKER_ROOT_ENV} is {root}, which {'lies in' if root.is_relative_to(hidden) else 'holds'} "
                            f"{hidden}, a folder the workers must not see: give the workers a folder outside the "
                            "project, the state folder and the Python environment (e.g. /var/tmp/zync-workers)")
    warehouse = target.spark_conf.get("spark.sql.warehouse.dir", "")
    if "://" not in warehouse or warehouse.startswith("file:"):
        raise ZyncError(f"workers of their own (${WORKER_ROOT_ENV}) cannot reach a warehouse on the driver's disk "
                        f"({warehouse}): put it on an object store, ZYNC_WAREHOUSE=s3a://bucket/prefix "
                        "(docs/object-storage.md), or unset the variable")
    if shutil.which("unshare") is None:
        raise ZyncError(f"workers of their own (${WORKER_ROOT_ENV}) run in a mount namespace of their own, made "
                        "with util-linux's `unshare`, which is not on the PATH: install util-linux")


def _link_tree(source: Path, copy: Path) -> None:
    """A copy of `source` made of hard links (a copy where the file system has none): a worker reads its
    Spark where the driver's environment is hidden from it."""
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, copy, copy_function=link, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                    dirs_exist_ok=True)


def _prepare_own_worker(root: Path, index: int) -> None:
    """The worker's Spark, folders and credential files, in its own root."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    spark = root / "spark"
    marker = spark / ".from"
    if not marker.exists() or marker.read_text() != str(spark_home()):
        shutil.rmtree(spark, ignore_errors=True)
        _link_tree(spark_home(), spark)
        marker.write_text(str(spark_home()))
    for folder in ("work", "local"):
        (root / worker_name(index) / folder).mkdir(parents=True, exist_ok=True)
    for variable, copy in _credential_copies(root).items():
        shutil.copyfile(os.environ[variable], copy)
        copy.chmod(0o600)


def remove_own_root() -> Path | None:
    """`zync down --purge`: the workers' own folder, when it is one `zync up --cluster` made (it holds the
    Spark it linked), removed with the credentials copied into it; its path, or None."""
    root = own_root()
    if root is None or not (root / "spark" / ".from").is_file():
        return None
    shutil.rmtree(root)
    return root


def _credential_copies(root: Path) -> dict[str, Path]:
    """{variable: the worker's copy} for each AWS credentials file the driver's environment names: a worker
    of its own has credentials of its own, as a machine of a cluster has its role or its file."""
    return {variable: root / f"credentials.{variable.lower()}" for variable in CREDENTIAL_FILE_VARIABLES
            if os.environ.get(variable)}


def _in_own_root(command: list[str]) -> list[str]:
    """`command` in a mount namespace of its own where the driver's folders are empty (a tmpfs over each);
    as a normal user in a user namespace too, mapped to the same user outside."""
    mounts = "".join(f"mount -t tmpfs -o size=64k,mode=0555 zync-hidden {shlex.quote(str(folder))} || exit 1\n"
                     for folder in hidden_from_workers())
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *user, "--mount", "--propagation", "private", "--",
            "/bin/sh", "-c", mounts + 'exec "$@"', "sh", *command]


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
    count = max(worker_count(), started_workers())
    root = own_root()
    if root is not None:
        _check_own_root(root, target)
    workers = [_worker(index, port, master_url, root, alive_workers) for index in range(count)]
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
    return [master, *workers, thrift_server]


def _worker(index: int, master_port: int, master_url: str, root: Path | None, alive_workers) -> Service:
    work = worker_dir(index)
    rpc_port, ui_port = worker_ports(master_port, index)
    env = _env()
    if root is None:
        home = spark_home()
        prepare = lambda: work.mkdir(parents=True, exist_ok=True)  # noqa: E731
    else:
        home = root / "spark"
        env |= {"SPARK_HOME": str(home), "SPARK_LOCAL_DIRS": str(work.parent / "local"),
                **{variable: str(copy) for variable, copy in _credential_copies(root).items()}}
        prepare = lambda: _prepare_own_worker(root, index)  # noqa: E731
    command = [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", master_url, "--host", LOOPBACK,
               "--port", str(rpc_port), "--webui-port", str(ui_port), "--cores", str(WORKER_CORES),
               "--memory", WORKER_MEMORY, "--work-dir", str(work)]
    return Service(
        name=worker_name(index), port=rpc_port, cwd=root or state_dir(),
        command=_in_own_root(command) if root else command,
        env=env, ready=lambda: alive_workers() > index, prepare=prepare,
        env_var="ZYNC_SPARK_MASTER_PORT", data=work,
    )


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

