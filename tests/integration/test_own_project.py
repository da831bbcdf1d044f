"""`zync init`: a project of one's own, pointed at Kafka and a registry by editing profiles/zync.yml
alone, compiles, mirrors the tables of a Debezium connector with `zync run`, and passes `dbt test`.

The suite's broker and registry stand in for the user's own: the project's zync.yml names them by
address, as a user names theirs. Spark's catalog and warehouse are the suite's (the environment's
ZYNC_STATE_DIR and ZYNC_CATALOG_PORT), so the test reads the mirror in its own session.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from testkit import debezium
from zync import topics

ROOT = Path(__file__).resolve().parents[2]
ZYNC = ROOT / ".venv" / "bin" / "zync"
DBT = ROOT / ".venv" / "bin" / "dbt"
SERVER, SCHEMA, TABLE = "ownproj", "public", "own_proj_customers"
TOPIC = debezium.topic(SERVER, SCHEMA, TABLE)


def _run(command: list, cwd: Path, timeout: float = 600) -> str:
    # The suite points zync at the repository; a user's shell in their project does not.
    env = {k: v for k, v in os.environ.items() if k not in ("ZYNC_PROJECT_DIR", "ZYNC_DEMO")}
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, command))} exited {done.returncode}:\n" \
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def _point_at(project: Path, target) -> None:
    """Edit profiles/zync.yml as the user would for their own Kafka and registry: the `local` entry's addresses."""
    settings = project / "profiles" / "zync.yml"
    text = settings.read_text()
    embedded = ('    bootstrap.servers: "127.0.0.1:{{ env_var(\'ZYNC_KAFKA_PORT\', \'19092\') }}"\n',
                '    url: "http://127.0.0.1:{{ env_var(\'ZYNC_REGISTRY_PORT\', \'18081\') }}/apis/ccompat/v7"\n')
    assert all(line in text for line in embedded), "the generated zync.yml no longer names the embedded services"
    text = text.replace(embedded[0], f'    bootstrap.servers: "{target.kafka["bootstrap.servers"]}"\n')
    text = text.replace(embedded[1], f'    url: "{target.schema_registry["url"]}"\n')
    settings.write_text(text)


def _produce(target, tmp_path: Path) -> None:
    key_fields = [{"name": "id", "type": "int"}]
    row_fields = key_fields + [{"name": "name", "type": ["null", "string"], "default": None}]
    key_file, value_file = tmp_path / "key.avsc", tmp_path / "value.avsc"
    key_file.write_text(json.dumps(debezium.key_schema(SERVER, SCHEMA, TABLE, key_fields)))
    value_file.write_text(json.dumps(debezium.value_schema(SERVER, SCHEMA, TABLE, row_fields)))
    now = int(time.time() * 1000)
    block = debezium.source(SERVER, "shop", SCHEMA, TABLE, now)
    rows = {1: "Ada", 2: "Grace", 3: "Edsger"}
    events = [{"key": {"id": i}, "value": debezium.event("c", {"id": i, "name": n}, None, block, now)}
              for i, n in rows.items()]
    events.append({"key": {"id": 2}, "value": debezium.event("u", {"id": 2, "name": "Grace H."},
                                                             {"id": 2, "name": "Grace"}, block, now)})
    events.append({"key": {"id": 3}, "value": debezium.event("d", None, {"id": 3, "name": "Edsger"}, block, now)})
    events.append({"key": {"id": 3}, "value": None})
    topics.produce(target, TOPIC, events, key_file, value_file)


def test_a_project_of_ones_own_mirrors_a_connectors_tables(target, spark, tmp_path):
    project = tmp_path / "shop"
    made = _run([ZYNC, "init", project, "--topics", rf"{SERVER}\.{SCHEMA}\..*"], cwd=tmp_path)
    assert "zync etl compile" in made
    _point_at(project, target)
    _produce(target, tmp_path)

    compiled = _run([ZYNC, "etl", "compile"], cwd=project)
    assert (project / "models" / "mirrors" / f"{TABLE}.sql").exists(), compiled
    _run([ZYNC, "run", "--once"], cwd=project)

    rows = {(r["id"], r["name"]) for r in spark.sql(f"select id, name from zync.{TABLE}").collect()}
    assert rows == {(1, "Ada"), (2, "Grace H.")}
    tested = _run([DBT, "test", "--select", TABLE], cwd=project)
    assert "PASS=" in tested and "PASS=0 " not in tested and "ERROR=0" in tested, tested[-3000:]
