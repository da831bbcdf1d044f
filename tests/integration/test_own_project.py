"""`zync init`: a project of one's own, pointed at Kafka and a registry by editing profiles/zync.yml
alone, compiles, mirrors the tables of a Debezium connector with `zync run`, and passes `dbt test`.

The suite's broker and registry stand in for the user's own: the project's zync.yml names them by
address, as a user names theirs. Spark's catalog and warehouse are the suite's (the environment's
ZYNC_STATE_DIR and ZYNC_CATALOG_PORT), so the test reads the mirror in its own session.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from testkit import debezium
from testkit.own_project import run_in, use_connections
from zync import topics

SERVER, SCHEMA, TABLE = "ownproj", "public", "own_proj_customers"
TOPIC = debezium.topic(SERVER, SCHEMA, TABLE)


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
    made = run_in(tmp_path, "zync", "init", project, "--topics", rf"{SERVER}\.{SCHEMA}\..*")
    assert "zync etl compile" in made
    # The suite's broker and registry by address, as a user names their own.
    use_connections(project, {"bootstrap.servers": target.kafka["bootstrap.servers"]},
                    {"url": target.schema_registry["url"]})
    _produce(target, tmp_path)

    compiled = run_in(project, "zync", "etl", "compile")
    assert (project / "models" / "mirrors" / f"{TABLE}.sql").exists(), compiled
    run_in(project, "zync", "run", "--once")

    rows = {(r["id"], r["name"]) for r in spark.sql(f"select id, name from zync.{TABLE}").collect()}
    assert rows == {(1, "Ada"), (2, "Grace H.")}
    tested = run_in(project, "dbt", "test", "--select", TABLE)
    assert "PASS=" in tested and "PASS=0 " not in tested and "ERROR=0" in tested, tested[-3000:]
