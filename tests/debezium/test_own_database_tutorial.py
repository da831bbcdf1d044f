"""The "Your own database" page (docs/own-database.md), step by step on real PostgreSQL, Kafka Connect,
Debezium, Kafka, zync and dbt: its SQL, its connector settings (Apicurio's converter, the one the
project's Connect worker has), its `zync init`, its zync.yml and its commands, as the page gives them.

What a user fills in is filled in with the suite's: the database's address and name, the registry's
and the brokers' addresses, and names of the test's own (a topic prefix and a table no other test
uses). Everything else is the page's text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from stack import connect, postgres
from testkit.own_project import run_in, use_connections

PAGE = Path(__file__).resolve().parents[2] / "docs" / "own-database.md"
DATABASE, PREFIX, TABLE = "dbz_tutorial", "dbztut", "tut_customers"


def _blocks(language: str) -> list[str]:
    return [text for lang, text in re.findall(r"^```(\w*)\n(.*?)^```", PAGE.read_text(), re.S | re.M)
            if lang == language]


def _yours(text: str, target) -> str:
    """The page's text with the user's own values: the suite's services and the test's names."""
    registry = str(target.schema_registry["url"])
    for example, mine in (("https://apicurio.example.com/apis/registry/v2", connect.registry_v2_url(target)),
                          ("https://schema-registry.example.com:8081", registry),
                          ("broker-1.example.com:9092", str(target.kafka["bootstrap.servers"])),
                          ("db.example.com", postgres.LOOPBACK), ('"5432"', f'"{postgres.port()}"'),
                          ('"shop"', f'"{DATABASE}"'), ("shop\\.public", f"{PREFIX}\\.public"),
                          ("customers", TABLE)):
        text = text.replace(example, mine)
    return text


def test_the_pages_steps_mirror_a_database_of_ones_own(debezium, target, spark, tmp_path):
    # 1. PostgreSQL: the server's settings, then the page's SQL in a database with a table of the user's.
    settings = {r["name"]: r["setting"] for r in debezium.query(
        "select name, setting from pg_settings where name in ('wal_level', 'max_replication_slots', "
        "'max_wal_senders')", "postgres")}
    assert settings["wal_level"] == "logical" and int(settings["max_replication_slots"]) >= 1
    debezium.database(DATABASE)
    debezium.psql("drop role if exists debezium", "postgres")
    debezium.psql(f"create table {TABLE} (id int primary key, name text); "
                  f"insert into {TABLE} values (1, 'Ada'), (2, 'Grace'), (3, 'Edsger')", DATABASE)
    (sql,) = _blocks("sql")
    debezium.psql(_yours(sql, target), DATABASE)

    # 2. The connector, Apicurio's converter, registered with the worker as the page says.
    _, apicurio = [json.loads(_yours(block, target)) for block in _blocks("json")]
    apicurio["topic.prefix"] = PREFIX
    debezium.connectors.append("tutorial")
    debezium.connect.run("tutorial", apicurio)
    topic = f"{PREFIX}.public.{TABLE}"
    debezium.wait_records(topic, 3)  # the snapshot
    debezium.psql(f"update {TABLE} set name = 'Grace H.' where id = 2; delete from {TABLE} where id = 3", DATABASE)
    debezium.wait_records(topic, 6)  # the update, the delete and its tombstone

    # 3. The project, zync.yml's local entry as the page shows it.
    commands = [line.split("#")[0].split() for block in _blocks("") for line in block.splitlines()
                if line.startswith(("zync ", "dbt ", "cd "))]
    init = next(c for c in commands if c[:2] == ["zync", "init"])
    run_in(tmp_path, *[_yours(word, target).strip("'") for word in init])
    project = tmp_path / init[2]
    (connections,) = _blocks("yaml")
    local = yaml.safe_load(_yours(connections, target))["local"]
    use_connections(project, local["kafka"], local["schema_registry"])

    # 4 and 5. The page's commands, `zync run` once (the page's runs on).
    for command in commands:
        if command[0] == "cd" or command[:2] == ["zync", "init"]:
            continue
        run_in(project, *(command + (["--once"] if command == ["zync", "run"] else [])))
    assert (project / "models" / "mirrors" / f"{TABLE}.sql").exists()
    assert (project / "target" / "catalog.json").exists()  # dbt docs generate
    rows = {(r["id"], r["name"]) for r in spark.sql(f"select id, name from zync.{TABLE}").collect()}
    assert rows == {(1, "Ada"), (2, "Grace H.")}
