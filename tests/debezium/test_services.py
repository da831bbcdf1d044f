"""`zync up --connect`: PostgreSQL and the Connect worker as docs/debezium.md says they run."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from stack import connect_worker, postgres, services
from zync.config import state_dir


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


def test_postgres_serves_a_state_folder_others_cannot_enter(debezium, target):
    """The suite's state folder is private (tests/conftest.py), as one below /root or a `mktemp -d`
    folder is. As root the server runs as `postgres`, which cannot enter it: its data lives in the
    folder held for this state folder, which links to it (stack/postgres.py)."""
    state = state_dir()
    assert state.stat().st_mode & 0o077 == 0, f"{state} is mode {oct(state.stat().st_mode)}, not private"
    assert debezium.query("select 1 as one", "postgres") == [{"one": 1}]
    data = Path(debezium.query("select setting from pg_settings where name = 'data_directory'",
                               "postgres")[0]["setting"])
    if os.geteuid() == 0:
        assert data == postgres.held_folder(state, postgres.held_root()) / "data"
        assert state.resolve() not in data.resolve().parents
        assert (state / "postgres" / "data").resolve() == data.resolve() and postgres.owned(data.parent)
        assert data.stat().st_uid == pwd.getpwnam("postgres").pw_uid and data.stat().st_mode & 0o077 == 0
        assert not (data.parent / "initdb-pwfile").exists()
    else:
        assert data == state / "postgres" / "data"
    line = next(line for line in services.status(target) if line.startswith("postgres:"))
    assert line.endswith(f"data {data})"), line
