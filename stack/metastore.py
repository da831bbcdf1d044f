"""The catalog as a service (`zync up --metastore`): Hive's metastore Thrift server, its database in the
stack's PostgreSQL.

The server is Hive 2.3.9's, from the jars pyspark ships (the metastore client every Spark process of
the project already embeds), started by jvm/metastore/LoopbackMetaStore.java so that it listens on
127.0.0.1:$ZYNC_METASTORE_PORT only. Its database is `metastore` in the PostgreSQL `zync up --connect`
also starts (stack/postgres.py), created when missing; before it serves, the launcher has DataNucleus
create every table of the schema that is missing (all of them on the first start). Config (hive-site.xml, with the database password: mode 0600) and
logs live in <state>/metastore/.

Spark processes use it when ZYNC_METASTORE_URI is thrift://127.0.0.1:<port> (profiles.yml's
`spark.hadoop.hive.metastore.uris`); empty, they keep the embedded client over Derby's server.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import struct
from pathlib import Path
from xml.sax.saxutils import escape

from stack import postgres
from stack.processes import Service, java
from zync.config import Target, local_dir, project_dir, state_dir
from zync.errors import ZyncError

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 19083
PORT_ENV = "ZYNC_METASTORE_PORT"
DATABASE = "metastore"
NAME = "metastore"
LAUNCHER = Path("jvm") / "metastore" / "LoopbackMetaStore.java"
# Folders under .local/jars whose jars join pyspark's on the server's class path: a warehouse on
# another file system (s3a://) needs its Hadoop connector here, as Spark's processes do.
JAR_FOLDERS: tuple[str, ...] = ("postgres", "s3a")
# Spark's Hadoop settings (spark.hadoop.<name>) the server takes too, so that it reaches the
# warehouse's file system as Spark does. Its environment is zync's own (credentials included).
HADOOP_SETTINGS: tuple[str, ...] = ("fs.s3a.",)


def port() -> int:
    return int(os.environ.get(PORT_ENV, str(DEFAULT_PORT)))


def uri() -> str:
    """What ZYNC_METASTORE_URI must say for Spark's processes to use this service."""
    return f"thrift://{LOOPBACK}:{port()}"


def folder() -> Path:
    return state_dir() / NAME


def _pyspark_jars() -> Path:
    # Found, not imported: `zync status` and `zync down` build this service too, and pyspark's import is slow.
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ZyncError("pyspark is not installed in this environment: run `make setup`")
    return Path(spec.submodule_search_locations[0]) / "jars"


def classpath() -> list[str]:
    """The server's class path: its config folder (hive-site.xml), pyspark's jars, JAR_FOLDERS."""
    return [str(folder() / "conf"), str(_pyspark_jars() / "*"),
            *(str(local_dir() / "jars" / name / "*") for name in JAR_FOLDERS)]


def _check_installed() -> None:
    for name in JAR_FOLDERS:
        jars = local_dir() / "jars" / name
        if not any(jars.glob("*.jar")):
            raise ZyncError(f"the metastore service's jars are not installed under {jars}: run `make setup`")


def warehouse(target: Target) -> str:
    """The warehouse Spark uses (spark.sql.warehouse.dir), for the tables and databases the server
    itself places (its `default` database)."""
    location = target.spark_conf.get("spark.sql.warehouse.dir")
    if not location:
        raise ZyncError(f"target {target.name!r} sets no spark.sql.warehouse.dir in profiles.yml; "
                        "the metastore service needs the warehouse Spark uses")
    return location


def hadoop_settings(target: Target) -> dict[str, str]:
    """The target's spark.hadoop.* settings named in HADOOP_SETTINGS, without their prefix."""
    prefix = "spark.hadoop."
    return {key[len(prefix):]: value for key, value in target.spark_conf.items()
            if key.startswith(prefix) and key[len(prefix):].startswith(HADOOP_SETTINGS)}


def settings(target: Target) -> dict[str, str]:
    return {
        **hadoop_settings(target),
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://{LOOPBACK}:{postgres.port()}/{DATABASE}",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": postgres.USER,
        "javax.jdo.option.ConnectionPassword": postgres.password(),
        # No schema scripts ship with pyspark's jars: DataNucleus creates the tables on the first
        # start and finds them on the next; Hive's version check would refuse a schema it did not write.
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": warehouse(target),
    }


def _write_config(target: Target) -> None:
    conf = folder() / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    site = conf / "hive-site.xml"
    site.touch(mode=0o600)
    site.chmod(0o600)  # the database password
    properties = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                         for k, v in settings(target).items())
    site.write_text(f'<?xml version="1.0"?>\n<configuration>\n{properties}</configuration>\n')
    (conf / "log4j2.properties").write_text("\n".join([
        # Warnings and errors: at INFO the server logs a few lines per call.
        "rootLogger.level = warn",
        "rootLogger.appenderRef.file.ref = file",
        "appender.file.type = File",
        "appender.file.name = file",
        f"appender.file.fileName = {folder() / (NAME + '.log')}",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = %d{ISO8601} %p %c{1}: %m%n%ex",
        # A client that disconnects (every Spark process, at its end) is logged as an error with a
        # stack trace by Thrift's server; the handler logs the errors of calls themselves.
        "logger.thrift.name = org.apache.thrift.server.TThreadPoolServer",
        "logger.thrift.level = off",
        # A lookup of a table or database that does not exist (CREATE ... IF NOT EXISTS) is a warning here.
        "logger.store.name = org.apache.hadoop.hive.metastore.ObjectStore",
        "logger.store.level = error",
        "",
    ]))


def prepare(target: Target) -> None:
    """The database (when missing) and the server's config, written afresh each start."""
    _check_installed()
    if not postgres.ready():
        raise ZyncError(f"PostgreSQL does not answer on {LOOPBACK}:{postgres.port()}; the metastore service keeps "
                        "its database there: start both with `zync up --metastore`")
    postgres.ensure_database(DATABASE)
    _write_config(target)


def _call(name: str) -> bytes:
    """A Thrift call without arguments in the strict binary protocol, Hive's clients' framing."""
    encoded = name.encode()
    return (struct.pack(">I", 0x80010001) + struct.pack(">I", len(encoded)) + encoded
            + struct.pack(">i", 1) + b"\x00")


def answers(host: str = LOOPBACK, port_: int | None = None) -> bool:
    """Whether the service answers a call (get_all_databases, a query of its database): a bare
    connection would only show the socket, and the server logs each as a broken message."""
    try:
        with socket.create_connection((host, port_ or port()), timeout=5) as connection:
            connection.sendall(_call("get_all_databases"))
            # Then the end of the request, and the whole reply read: the server sees a client that
            # left, not a connection reset.
            connection.shutdown(socket.SHUT_WR)
            reply = b""
            while chunk := connection.recv(65536):
                reply += chunk
    except OSError:
        return False
    # A reply's header: version 1, message type REPLY (2).
    return reply.startswith(struct.pack(">I", 0x80010002))


def service(target: Target) -> Service:
    conf = folder() / "conf"
    return Service(
        name=NAME,
        port=port(),
        command=[
            java(), "-Xmx512m",
            f"-Dlog4j.configurationFile={conf / 'log4j2.properties'}",
            "-cp", os.pathsep.join(classpath()),
            str(project_dir() / LAUNCHER), LOOPBACK, str(port()),
        ],
        cwd=folder(),
        prepare=lambda: prepare(target),
        ready=answers,
        env_var=PORT_ENV,
    )
