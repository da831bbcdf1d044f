"""`zync up --connect`: PostgreSQL and the Connect worker as docs/debezium.md says they run."""

from __future__ import annotations

import os
from pathlib import Path

from stack import connect_worker, postgres, services


def test_status_lists_postgres_and_connect_up(debezium, target):
    lines = services.status(target)
    assert any(line.startswith(f"postgres: up on 127.0.0.1:{postgres.port()}") for line in lines), lines
    assert any(line.startswith(f"connect: up on 127.0.0.1:{connect_worker.port()}") for line in lines), lines


def test_postgres_runs_for_logical_decoding_on_loopback_and_never_as_root(debezium):
    settings = {r["name"]: r["setting"] for r in debezium.query(
        "select name, setting from pg_settings where name in "
        "('wal_level', 'listen_addresses', 'max_replication_slots', 'unix_socket_directories', 'data_directory')",
        "postgres")}
    assert settings["wal_level"] == "logical" and settings["listen_addresses"] == "127.0.0.1"
    assert int(settings["max_replication_slots"]) >= 10 and settings["unix_socket_directories"] == ""
    assert Path(settings["data_directory"]) == postgres.data_dir()
    owner = Path(f"/proc/{postgres.service().pid()}").stat().st_uid
    assert owner != 0 and (os.geteuid() != 0 or owner == postgres.data_dir().stat().st_uid)


def test_connect_offers_the_project_plugins(debezium):
    plugins = debezium.connect.plugins()
    assert {"io.debezium.connector.postgresql.PostgresConnector", "io.debezium.connector.jdbc.JdbcSinkConnector",
            "io.apicurio.registry.utils.converter.AvroConverter"} <= plugins
