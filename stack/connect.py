"""Register Debezium connectors on the Kafka Connect worker and wait until they run.

The settings here are the ones that work against zync's embedded broker and
Apicurio Registry 3.0.9 (docs/debezium.md):

- Converter: Apicurio's AvroConverter 2.6 talking to the registry's v2 API,
  writing the Confluent wire format (`as-confluent=true`: magic byte and a
  4-byte id, no Apicurio headers) with the schema's *content id*
  (`use-id=contentId`), which is what the registry's Confluent-compatible API
  (zync's decoder) resolves an id to. Global ids would resolve to other
  subjects' schemas.
- Topics: the embedded broker never auto-creates topics, so a source connector
  creates its own through `topic.creation.default.*` (replication factor 1);
  without them its producer logs UNKNOWN_TOPIC_OR_PARTITION and writes nothing
  while the connector still reports RUNNING.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlsplit
from urllib.request import Request, urlopen

from stack import connect_worker, postgres
from zync.config import Target
from zync.errors import ZyncError

AVRO_CONVERTER = "io.apicurio.registry.utils.converter.AvroConverter"


class ConnectorFailed(ZyncError):
    """A connector or one of its tasks is FAILED; the message carries Connect's trace."""


def registry_v2_url(target: Target) -> str:
    """The registry's native v2 API (what Apicurio's 2.6 converter speaks) beside zync's ccompat URL."""
    url = str(target.schema_registry["url"])
    parts = urlsplit(url)
    if "/apis/" not in parts.path:
        raise ZyncError(f"the registry URL {url} is not Apicurio's (no /apis/ in its path); "
                        "Apicurio's converter needs Apicurio Registry")
    base = parts.path.split("/apis/")[0]
    return f"{parts.scheme}://{parts.netloc}{base}/apis/registry/v2"


def avro_converter(target: Target) -> dict[str, str]:
    """key.converter* and value.converter* settings: Avro in the Confluent wire format, content ids."""
    settings: dict[str, str] = {}
    for side in ("key", "value"):
        prefix = f"{side}.converter"
        settings |= {
            prefix: AVRO_CONVERTER,
            f"{prefix}.apicurio.registry.url": registry_v2_url(target),
            f"{prefix}.apicurio.registry.auto-register": "true",
            f"{prefix}.apicurio.registry.find-latest": "true",
            f"{prefix}.apicurio.registry.as-confluent": "true",
            f"{prefix}.apicurio.registry.use-id": "contentId",
            f"{prefix}.apicurio.registry.headers.enabled": "false",
        }
    return settings


def postgres_source(target: Target, name: str, database: str, tables: list[str], topic_prefix: str,
                    **overrides: str) -> dict[str, str]:
    """A Debezium PostgreSQL source (pgoutput) for `tables` ("schema.table") of `database` on zync's PostgreSQL.

    Its topics are <topic_prefix>.<schema>.<table>; its replication slot and publication are named after
    the connector, so several connectors never share one.
    """
    ident = "".join(c if c.isalnum() else "_" for c in name.lower())
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "database.hostname": postgres.LOOPBACK,
        "database.port": str(postgres.port()),
        "database.user": postgres.USER,
        "database.password": postgres.password(),
        "database.dbname": database,
        "topic.prefix": topic_prefix,
        "plugin.name": "pgoutput",
        "slot.name": f"{ident}_slot",
        "publication.name": f"{ident}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(tables),
        "snapshot.mode": "initial",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
        **avro_converter(target),
        **overrides,
    }


def jdbc_sink(target: Target, name: str, topics: list[str], database: str, topics_regex: str | None = None,
              **overrides: str) -> dict[str, str]:
    """A Debezium JDBC sink upserting zync's output records (Avro, Confluent wire format) into `database`.

    The table is the topic name (`table.name.format` overrides it); partial updates set only the
    columns their record carries; a tombstone (null value) deletes the row of its key. topics_regex
    instead of `topics`: every topic matching it, those created later included (Connect's
    `topics.regex`). A Debezium change event (value schema named `...Envelope`) is applied as its
    row: `after` upserted, op d deleting the key's row.
    """
    return {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "tasks.max": "1",
        **({"topics.regex": topics_regex} if topics_regex is not None else {"topics": ",".join(topics)}),
        "connection.url": f"jdbc:postgresql://{postgres.LOOPBACK}:{postgres.port()}/{database}",
        "connection.username": postgres.USER,
        "connection.password": postgres.password(),
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "delete.enabled": "true",
        "schema.evolution": "basic",
        # A failed record stops the task, with its trace in the connector's status.
        "errors.tolerance": "none",
        **avro_converter(target),
        **overrides,
    }


def _root_cause(trace: str) -> str:
    """The innermost exception of a Java stack trace: usually the line that says what is wrong."""
    lines = [line.strip() for line in trace.splitlines()]
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
    return causes[-1] if causes else (lines[0] if lines else "")


class Connect:
    """Kafka Connect's REST API (the worker of `zync up --connect` by default)."""

    def __init__(self, url: str | None = None):
        self.url = (url or connect_worker.url()).rstrip("/")

    def _call(self, method: str, path: str, body: Any = None, ok_missing: bool = False) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = Request(f"{self.url}{path}", data=data, method=method,
                          headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urlopen(request, timeout=60) as response:
                text = response.read().decode()
        except HTTPError as e:
            if ok_missing and e.code == 404:
                return None
            detail = e.read().decode(errors="replace")
            try:
                detail = json.loads(detail).get("message", detail)
            except (ValueError, AttributeError):
                pass
            raise ZyncError(f"Kafka Connect at {self.url} refused {method} {path}: HTTP {e.code}: {detail}") from None
        except (URLError, OSError) as e:
            raise ZyncError(f"cannot reach Kafka Connect at {self.url} ({e}); is it running "
                            "(`zync up --connect`)?") from None
        return json.loads(text) if text.strip() else None

    def plugins(self) -> set[str]:
        """Classes of the connectors, converters and transforms the worker found on its plugin.path."""
        return {p["class"] for p in self._call("GET", "/connector-plugins?connectorsOnly=false")}

    def connectors(self) -> list[str]:
        return self._call("GET", "/connectors")

    def put(self, name: str, config: dict[str, str]) -> None:
        """Create the connector, or replace its config."""
        self._call("PUT", f"/connectors/{quote(name)}/config", {**config, "name": name})

    def status(self, name: str) -> dict[str, Any] | None:
        return self._call("GET", f"/connectors/{quote(name)}/status", ok_missing=True)

    def delete(self, name: str) -> None:
        self._call("DELETE", f"/connectors/{quote(name)}", ok_missing=True)
        deadline = time.monotonic() + 30
        while name in self.connectors() and time.monotonic() < deadline:
            time.sleep(0.2)

    def pause(self, name: str) -> None:
        self._call("PUT", f"/connectors/{quote(name)}/pause")

    def resume(self, name: str) -> None:
        self._call("PUT", f"/connectors/{quote(name)}/resume")

    def stop(self, name: str) -> None:
        """Stop the connector and its tasks (STOPPED keeps its config and offsets)."""
        self._call("PUT", f"/connectors/{quote(name)}/stop")

    def restart(self, name: str) -> None:
        """Restart the connector and all its tasks."""
        self._call("POST", f"/connectors/{quote(name)}/restart?includeTasks=true&onlyFailed=false")

    def _raise_if_failed(self, name: str, status: dict[str, Any]) -> None:
        failed = [("connector", status["connector"])] if status["connector"]["state"] == "FAILED" else []
        failed += [(f"task {t['id']}", t) for t in status.get("tasks", []) if t["state"] == "FAILED"]
        if failed:
            what, part = failed[0]
            trace = part.get("trace", "(no trace)").strip()
            raise ConnectorFailed(
                f"connector {name!r}: {what} FAILED on {part.get('worker_id')}: {_root_cause(trace)}\n"
                f"{trace[:4000]}\n"
                f"    see {connect_worker.folder() / 'connect.log'}; fix the config and "
                f"`PUT /connectors/{name}/config` again, or restart it")

    def wait(self, name: str, state: str = "RUNNING", timeout_s: float = 120.0) -> dict[str, Any]:
        """Wait until the connector and all its tasks (at least one) are in `state`; a FAILED one raises
        ConnectorFailed with its trace."""
        deadline = time.monotonic() + timeout_s
        last: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            last = self.status(name)
            if last is not None:
                self._raise_if_failed(name, last)
                tasks = last.get("tasks", [])
                wanted_tasks = state != "STOPPED"  # a stopped connector has no tasks
                if last["connector"]["state"] == state and (
                        not wanted_tasks or (tasks and all(t["state"] == state for t in tasks))):
                    return last
            time.sleep(0.5)
        raise ZyncError(f"connector {name!r} did not reach {state} within {timeout_s:.0f}s; last status: "
                        f"{json.dumps(last)}")

    def check(self, name: str) -> dict[str, Any]:
        """The connector's status; ConnectorFailed if it or a task has FAILED."""
        status = self.status(name)
        if status is None:
            raise ZyncError(f"connector {name!r} does not exist on {self.url}")
        self._raise_if_failed(name, status)
        return status

    def watch(self, name: str, seconds: float) -> dict[str, Any]:
        """Keep checking the connector for `seconds` (a task fails on its first bad record, after it
        reported RUNNING); ConnectorFailed as soon as it fails."""
        deadline = time.monotonic() + seconds
        while True:
            status = self.check(name)
            if time.monotonic() > deadline:
                return status
            time.sleep(0.5)

    def run(self, name: str, config: dict[str, str], timeout_s: float = 120.0) -> dict[str, Any]:
        """Create (or reconfigure) a connector and wait until it and its tasks run."""
        self.put(name, config)
        return self.wait(name, "RUNNING", timeout_s)
