"""The Kafka Connect worker that `zync up --connect` starts: distributed mode on the embedded broker.

Its classpath is .local/connect/runtime (Kafka Connect 3.9.1, the broker's
version); its plugin.path is .local/connect/plugins, one folder per plugin
(Debezium's PostgreSQL source, Debezium's JDBC sink, Apicurio's Avro
converter), each loaded in its own class loader so their dependencies never
clash. Config, offset and status topics live on the embedded broker with
replication factor 1; the REST API listens on 127.0.0.1:$ZYNC_CONNECT_PORT.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

from stack.processes import Service, java
from zync.config import Target, local_dir, state_dir
from zync.errors import ZyncError

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 18083
PORT_ENV = "ZYNC_CONNECT_PORT"
GROUP_ID = "zync-connect"
CONFIG_TOPIC = "_zync_connect_configs"
OFFSET_TOPIC = "_zync_connect_offsets"
STATUS_TOPIC = "_zync_connect_status"


def port() -> int:
    return int(os.environ.get(PORT_ENV, str(DEFAULT_PORT)))


def url() -> str:
    return f"http://{LOOPBACK}:{port()}"


def folder() -> Path:
    return state_dir() / "connect"


def plugin_path() -> Path:
    return local_dir() / "connect" / "plugins"


def _bootstrap(target: Target) -> str:
    return str(target.kafka["bootstrap.servers"])


def write_config(target: Target) -> None:
    out = folder()
    out.mkdir(parents=True, exist_ok=True)
    runtime = local_dir() / "connect" / "runtime"
    if not any(runtime.glob("connect-runtime-*.jar")) or not plugin_path().is_dir():
        raise ZyncError(f"Kafka Connect is not installed under {local_dir() / 'connect'}: run `make setup`")
    (out / "worker.properties").write_text("\n".join([
        f"bootstrap.servers={_bootstrap(target)}",
        f"group.id={GROUP_ID}",
        f"config.storage.topic={CONFIG_TOPIC}",
        f"offset.storage.topic={OFFSET_TOPIC}",
        f"status.storage.topic={STATUS_TOPIC}",
        # One broker: every internal topic with replication factor 1.
        "config.storage.replication.factor=1",
        "offset.storage.replication.factor=1",
        "offset.storage.partitions=1",
        "status.storage.replication.factor=1",
        "status.storage.partitions=1",
        # Connectors bring their own converters (Avro through Apicurio); these
        # are only the defaults for one that does not.
        "key.converter=org.apache.kafka.connect.json.JsonConverter",
        "value.converter=org.apache.kafka.connect.json.JsonConverter",
        # The broker does not auto-create topics: source connectors create
        # theirs through topic.creation.default.* (see stack/connect.py).
        "topic.creation.enable=true",
        f"listeners=http://{LOOPBACK}:{port()}",
        f"rest.advertised.host.name={LOOPBACK}",
        f"rest.advertised.port={port()}",
        f"plugin.path={plugin_path()}",
        # The plugin folders hold plain Maven jars without ServiceLoader
        # manifests for Connect; scanning finds their classes.
        "plugin.discovery=only_scan",
        # Commit source offsets often: a restart replays less.
        "offset.flush.interval.ms=1000",
        "",
    ]))
    (out / "log4j.properties").write_text("\n".join([
        "log4j.rootLogger=INFO, file",
        "log4j.appender.file=org.apache.log4j.FileAppender",
        f"log4j.appender.file.File={out / 'connect.log'}",
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
        "log4j.appender.file.layout.ConversionPattern=[%d] %p %X{connector.context}%m (%c)%n",
        "log4j.logger.org.reflections=ERROR",
        "log4j.logger.org.apache.kafka.clients=WARN",
        "",
    ]))


def ready() -> bool:
    """The REST API answers /connectors once the worker has joined its group."""
    try:
        with urlopen(f"{url()}/connectors", timeout=2) as r:
            return r.status == 200
    except (URLError, OSError):
        return False


def service(target: Target) -> Service:
    out = folder()
    return Service(
        name="connect", port=port(),
        command=[
            java(), "-Xmx1g", "-Xms256m",
            f"-Dlog4j.configuration=file:{out / 'log4j.properties'}",
            "-cp", str(local_dir() / "connect" / "runtime" / "*"),
            "org.apache.kafka.connect.cli.ConnectDistributed", str(out / "worker.properties"),
        ],
        cwd=out, prepare=lambda: write_config(target), ready=ready, env_var=PORT_ENV,
    )
