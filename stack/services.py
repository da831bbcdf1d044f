"""`zync up / down / status`: the embedded single-node KRaft broker, Apicurio Registry and catalog,
with `--connect` PostgreSQL and a Kafka Connect worker with Debezium, and with `--metastore`
PostgreSQL and the catalog as a service (Hive's metastore over Thrift, stack/metastore.py).

The catalog is Apache Derby's network server holding the Hive metastore
database that every Spark process of the local target shares.
All run as detached processes on loopback, with their data, logs and pid files
under the state folder, so that they outlive the command that started them
(stack/processes.py).
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import urlopen

from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from stack import cluster as spark_cluster
from stack import connect_worker, local_security, postgres, s3
from stack import metastore as hive_metastore
from stack.processes import Service, java
from zync.config import Target, load_target, local_dir, project_dir, state_dir
from zync.errors import ZyncError
from zync.spark import catalog_answers

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 120.0


def _port_of(address: str) -> int:
    host, _, port = address.split(",")[0].rpartition(":")
    if host not in (LOOPBACK, "localhost"):
        raise ZyncError(f"the embedded broker runs on loopback only, but the target points at {address}")
    return int(port)


def kafka_service(target: Target) -> Service:
    port = _port_of(str(target.kafka["bootstrap.servers"]))
    folder = state_dir() / "kafka"
    return Service(
        name="kafka",
        port=port,
        command=[
            java(), "-Xmx768m", "-Xms256m",
            f"-Dlog4j.configuration=file:{folder / 'log4j.properties'}",
            "-cp", str(local_dir() / "jars" / "kafka" / "*"),
            "kafka.Kafka", str(folder / "server.properties"),
        ],
        cwd=folder,
    )


def registry_service(target: Target) -> Service:
    url = urlparse(str(target.schema_registry["url"]))
    if url.hostname not in (LOOPBACK, "localhost") or url.port is None:
        raise ZyncError(f"the embedded registry runs on loopback only, but the target points at {url.geturl()}")
    folder = state_dir() / "registry"
    jars = sorted((local_dir() / "apicurio").glob("apicurio-registry-app-*-runner.jar"))
    if not jars:
        raise ZyncError("Apicurio Registry is not installed under .local/apicurio: run `make setup`")
    return Service(
        name="registry",
        port=url.port,
        command=[
            java(), "-Xmx512m",
            f"-Dquarkus.http.host={LOOPBACK}", f"-Dquarkus.http.port={url.port}",
            "-Dquarkus.management.enabled=false",
            # A file-backed H2 store: schemas must survive a restart, since the
            # topics (and their schema ids) do.
            "-Dapicurio.storage.kind=sql", "-Dapicurio.storage.sql.kind=h2",
            f"-Dapicurio.datasource.url=jdbc:h2:file:{folder / 'db'}",
            "-jar", str(jars[-1]),
        ],
        cwd=jars[-1].parent,
    )


def catalog_service(target: Target) -> Service | None:
    """Derby's network server for the metastore database the target's Spark reaches over JDBC (None: no such URL)."""
    address = target.derby_address
    if address is None:
        return None
    host, port = address
    if host not in (LOOPBACK, "localhost"):
        raise ZyncError(f"the embedded catalog runs on loopback only, but the target points at {host}:{port}")
    jars = local_dir() / "jars" / "derby"
    if not any(jars.glob("derbynet-*.jar")):
        raise ZyncError(f"Apache Derby is not installed under {jars}: run `make setup`")
    folder = state_dir() / "catalog"
    return Service(
        name="catalog",
        port=port,
        command=[
            java(), "-Xmx256m",
            # The database `metastore_db` is then <state>/metastore_db: where an
            # embedded Spark metastore of earlier versions kept it, served as is.
            f"-Dderby.system.home={state_dir()}",
            f"-Dderby.stream.error.file={folder / 'catalog.log'}",
            "-cp", str(jars / "*"),
            "org.apache.derby.drda.NetworkServerControl", "start", "-h", LOOPBACK, "-p", str(port),
            # Loopback only; Java 17 deprecates the security manager Derby would install.
            "-noSecurityManager",
        ],
        cwd=folder,
        data=state_dir() / "metastore_db",
        ready=lambda: catalog_answers(LOOPBACK, port),
        env_var="ZYNC_CATALOG_PORT",
    )


def secured_ports(kafka_port: int) -> tuple[int, int]:
    """The embedded broker's SASL_SSL and SSL (client certificate) ports: k+2, k+3 (k+1 is the controller)."""
    return kafka_port + 2, kafka_port + 3


def _write_kafka_config(service: Service) -> None:
    """server.properties, TLS material and SASL password, and the storage format on first start."""
    folder = service.folder
    folder.mkdir(parents=True, exist_ok=True)
    controller_port = service.port + 1
    sasl_port, tls_port = secured_ports(service.port)
    local_security.ensure_material(folder)
    # PLAINTEXT stays the default listener (and the inter-broker one); the
    # secured listeners exist so targets can be tested the way clusters run.
    (folder / "server.properties").write_text(
        "\n".join([
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.voters=1@{LOOPBACK}:{controller_port}",
            f"listeners=PLAINTEXT://{LOOPBACK}:{service.port},CONTROLLER://{LOOPBACK}:{controller_port},"
            f"SASL_SSL://{LOOPBACK}:{sasl_port},SSL://{LOOPBACK}:{tls_port}",
            f"advertised.listeners=PLAINTEXT://{LOOPBACK}:{service.port},SASL_SSL://{LOOPBACK}:{sasl_port},"
            f"SSL://{LOOPBACK}:{tls_port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
            *local_security.listener_properties(folder, sasl_port, tls_port),
            # ACLs as a secured cluster has them: a resource with ACLs admits only whom they allow;
            # one without admits everyone (this broker is for one developer), and the loopback
            # PLAINTEXT and controller listeners (principal ANONYMOUS) may do anything.
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found=true",
            "super.users=User:ANONYMOUS",
            f"log.dirs={folder / 'data'}",
            "num.partitions=1",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            # Topics are created on purpose (produce, to-kafka), never by a typo.
            "auto.create.topics.enable=false",
            "",
        ])
    )
    (folder / "log4j.properties").write_text(
        "\n".join([
            "log4j.rootLogger=INFO, file",
            "log4j.appender.file=org.apache.log4j.FileAppender",
            f"log4j.appender.file.File={service.log_file}",
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "",
        ])
    )
    if not (folder / "data" / "meta.properties").exists():
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        result = subprocess.run(
            [java(), "-cp", str(local_dir() / "jars" / "kafka" / "*"), "kafka.tools.StorageTool",
             # One argument: a random id may begin with "-", which the tool would read as an option.
             "format", f"--cluster-id={cluster_id}", "-c", str(folder / "server.properties"),
             *local_security.scram_format_args(folder)],
            capture_output=True, text=True,
        )
        if result.returncode != 0:
            # Not CalledProcessError: its message would print the SCRAM password argument.
            raise ZyncError(f"formatting the broker's storage in {folder / 'data'} failed: "
                            f"{(result.stdout + result.stderr).strip()[-400:]}")
        (folder / "security" / "scram-at-format").touch()


def _ensure_scram_user(service: Service) -> None:
    """A broker formatted before the secured listeners existed gets its SCRAM user now."""
    marker = service.folder / "security" / "scram-at-format"
    if marker.exists():
        return
    client = AdminClient({"bootstrap.servers": f"{LOOPBACK}:{service.port}"})
    upsert = UserScramCredentialUpsertion(local_security.SASL_USER,
                                          ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                          local_security.sasl_password(service.folder).encode())
    for future in client.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    marker.touch()


def _answers(service: Service) -> bool:
    if service.ready is not None:
        return service.ready()
    if service.name == "registry":
        try:
            with urlopen(f"http://{LOOPBACK}:{service.port}/apis/ccompat/v7/subjects", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False
    try:
        with socket.create_connection((LOOPBACK, service.port), timeout=2):
            pass
    except OSError:
        return False

    try:
        AdminClient({"bootstrap.servers": f"{LOOPBACK}:{service.port}"}).list_topics(timeout=5)
        return True
    except Exception:  # noqa: BLE001 - any failure means "not ready yet"
        return False


def _start(service: Service) -> None:
    service.folder.mkdir(parents=True, exist_ok=True)
    if service.name == "kafka":
        _write_kafka_config(service)
    if service.prepare is not None:
        service.prepare()
    with open(service.folder / "stdout.log", "ab") as out:
        process = subprocess.Popen(
            service.command, cwd=service.cwd, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            user=service.user, group=service.user,
            env={**os.environ, **service.env} if service.env else None,
        )
    service.pid_file.write_text(str(process.pid))


def _wait(service: Service) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if _answers(service):
            return
        if service.pid() is None:
            raise ZyncError(
                f"{service.name} exited while starting; see {service.folder / 'stdout.log'} "
                f"and {service.log_file}"
            )
        time.sleep(0.5)
    raise ZyncError(f"{service.name} did not answer on {LOOPBACK}:{service.port} within {START_TIMEOUT_S:.0f}s")


def services(target: Target) -> list[Service]:
    if target.name == "cluster":  # the local cluster's own Kafka, registry and catalog are local's
        target = load_target("local")
    if target.name != "local":
        raise ZyncError(f"zync up/down/status manage the embedded services of target 'local', not {target.name!r}")
    catalog = catalog_service(target)
    return [kafka_service(target), registry_service(target), *([catalog] if catalog else [])]


def connect_services(target: Target) -> list[Service]:
    """PostgreSQL and the Kafka Connect worker (`zync up --connect`), in start order."""
    return [postgres.service(), connect_worker.service(target)]


def s3_services() -> list[Service]:
    """The S3-compatible server (`zync up --s3`)."""
    return [s3.service()]


def metastore_services(target: Target) -> list[Service]:
    """PostgreSQL and the metastore service (`zync up --metastore`), in start order."""
    return [postgres.service(), hive_metastore.service(target)]


def _unique(services_: list[Service]) -> list[Service]:
    """Each service once (PostgreSQL serves both Connect and the metastore), in first-seen order."""
    names: set[str] = set()
    return [s for s in services_ if not (s.name in names or names.add(s.name))]


def cluster_services() -> list[Service]:
    """The local Spark cluster (`zync up --cluster`): master, worker, Thrift Server, in start order."""
    return spark_cluster.services()


def _all(target: Target, connect: bool, cluster: bool = False, object_store: bool = False,
         metastore: bool = False) -> list[Service]:
    """The services to act on: the broker, registry and catalog, PostgreSQL, Connect, the S3 server and
    the metastore service, and the Spark cluster, when asked for or when they were ever started here
    (their state folder exists)."""
    extra = [s for s in connect_services(target) if connect or s.folder.exists()]
    extra += [s for s in s3_services() if object_store or s.folder.exists()]
    extra = _unique(extra + [s for s in metastore_services(target) if metastore or s.folder.exists()])
    # The cluster's settings come from the `cluster` target: read only when the cluster is asked
    # for or was started here, so a project without that target keeps its `zync up`.
    started = spark_cluster.started_workers() > 0 or any(
        (state_dir() / name).exists() for name in spark_cluster.SERVICE_NAMES)
    spark = [s for s in cluster_services() if cluster or s.folder.exists()] if cluster or started else []
    return services(target) + extra + spark


# Start order: each phase waits for the one before (Connect needs the broker's topics; the worker
# needs the master; the Thrift Server needs the worker's executors and the catalog).
# The metastore service needs PostgreSQL, which starts in the first phase.
_LATER_PHASES = (("connect", "spark-master", hive_metastore.NAME), ("spark-worker",), ("thrift-server",))


def _phase(name: str) -> int:
    """The start phase of a service (0: the first); worker n >= 2 (`spark-worker-<n>`) starts in the first worker's."""
    name = spark_cluster.SERVICE_NAMES[1] if name.startswith(spark_cluster.SERVICE_NAMES[1] + "-") else name
    return next((number for number, phase in enumerate(_LATER_PHASES, 1) if name in phase), 0)


def up(target: Target, connect: bool = False, only: set[str] | None = None, cluster: bool = False,
       object_store: bool = False, metastore: bool = False) -> list[str]:
    """Start what is not running (of `only`, default all), wait until everything answers; return status lines."""
    wanted = _unique(services(target) + (connect_services(target) if connect else []) + (
        s3_services() if object_store else []) + (metastore_services(target) if metastore else []) + (
        cluster_services() if cluster else []))
    wanted = [s for s in wanted if only is None or s.name in only]
    phases = [[s for s in wanted if _phase(s.name) == 0],
              *[[s for s in wanted if _phase(s.name) == number] for number in range(1, len(_LATER_PHASES) + 1)]]
    for phase in phases:
        started = []
        for service in phase:
            if service.pid() is None:
                if _answers(service):
                    raise ZyncError(
                        f"something else already listens on {LOOPBACK}:{service.port}; stop it or "
                        f"choose another port ({service.env_var or 'ZYNC_KAFKA_PORT / ZYNC_REGISTRY_PORT / ZYNC_CATALOG_PORT'})"
                    )
                _start(service)
                started.append(service)
        for service in started:
            _wait(service)
            if service.name == "kafka":
                _ensure_scram_user(service)
            if service.name == s3.NAME:
                s3.ensure_bucket()
    return status(target, connect, cluster, object_store, metastore)


def down(target: Target, only: set[str] | None = None) -> list[str]:
    """Stop every service that runs (or those named in `only`), Connect first (it still needs the
    broker to stop cleanly)."""
    lines = []
    for service in reversed(_all(target, connect=False)):
        if only is not None and service.name not in only:
            continue
        pid = service.pid()
        if pid is None:
            lines.append(f"{service.name}: not running")
            continue
        os.killpg(pid, service.stop_signal)
        deadline = time.monotonic() + 30
        while service.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        if service.pid() is not None:
            os.killpg(pid, signal.SIGKILL)
        service.pid_file.unlink(missing_ok=True)
        lines.append(f"{service.name}: stopped (pid {pid})")
    return list(reversed(lines))


def purge(target: Target) -> list[str]:
    """`zync down --purge`: stop every service, then delete the state folder and the data it owns
    outside it (PostgreSQL's, when zync runs as root: stack/postgres.py)."""
    state = state_dir().resolve()
    # ZYNC_STATE_DIR comes from the environment: a slip there must not delete a project or a home.
    guarded = {Path("/"), Path.home().resolve(), *project_dir().resolve().parents, project_dir().resolve()}
    if state in guarded:
        raise ZyncError(f"refusing to delete the state folder {state}: it is the project folder, one above it, "
                        "the home folder or /; point ZYNC_STATE_DIR at a folder of zync's own")
    lines = down(target)
    held = postgres.remove_held_data()
    if held is not None:
        lines.append(f"postgres: data {held} removed")
    if state.exists():
        shutil.rmtree(state)
        lines.append(f"state folder {state} removed")
    workers = spark_cluster.remove_own_root()
    if workers is not None:
        lines.append(f"the Spark workers' folder {workers} removed")
    return lines


def status(target: Target, connect: bool = False, cluster: bool = False, object_store: bool = False,
           metastore: bool = False) -> list[str]:
    lines = []
    for service in _all(target, connect, cluster, object_store, metastore):
        pid = service.pid()
        if pid is None:
            lines.append(f"{service.name}: not running (port {service.port})")
        else:
            state = "up" if _answers(service) else "starting"
            lines.append(f"{service.name}: {state} on {LOOPBACK}:{service.port} (pid {pid}, data {service.data or service.folder})")
    return lines
