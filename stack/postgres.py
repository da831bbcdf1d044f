"""PostgreSQL for Debezium: Debian's server, run by zync on loopback, its data owned by the state folder.

`make setup` installs Debian's `postgresql` package when its binaries are missing.
zync runs its own cluster (never Debian's `main` cluster): `initdb`, then
`postgres` with `wal_level=logical`, listening on 127.0.0.1:$ZYNC_POSTGRES_PORT
only, without a Unix socket. Clients log in as the superuser `zync` with a
password generated at initdb and kept in <state>/postgres/password (mode 0600).

Where the data lives depends on who runs zync:
- a normal user: the server runs as that user, its data in <state>/postgres/data.
- root (containers, CI): PostgreSQL refuses to run as root, so the server runs
  as Debian's `postgres` user, which cannot enter a state folder below a private
  folder (/root, a `mktemp -d` folder: mode 0700). Its data then lives in
  ~postgres/zync/<first 12 hex digits of sha256(state folder's resolved path)>/data
  (/var/lib/postgresql/zync/... on Debian; owned by `postgres`, mode 0700), and
  <state>/postgres/data is a symlink to it. The link is what makes the state
  folder its owner: a folder there whose state folder no longer links to it
  (the state folder was wiped or deleted) is removed before the next initdb,
  so a wiped state folder starts afresh, as it does for a normal user.
  `zync down --purge` (`make clean`) removes it with the state folder. A cluster
  an earlier version initdb'ed in place under <state>/postgres/data stays there.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
from decimal import Decimal
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

from zync.config import state_dir
from zync.errors import ZyncError
from stack.processes import Service

LOOPBACK = "127.0.0.1"
USER = "zync"
# The user the server runs as when zync runs as root.
SERVER_USER = "postgres"
# In a folder of data held for a state folder: the state folder's path, to find its link again.
STATE_RECORD = "state-folder"
DEFAULT_PORT = 15432
PORT_ENV = "ZYNC_POSTGRES_PORT"
# Debian's layout: /usr/lib/postgresql/<major>/bin. ZYNC_POSTGRES_BIN overrides it.
DEBIAN_ROOT = Path("/usr/lib/postgresql")
# Enough for a few source connectors per test run (one slot and one WAL sender each).
SETTINGS = {
    "listen_addresses": LOOPBACK,
    "unix_socket_directories": "",
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "max_connections": "100",
    # A throwaway dev/test database: losing the last transactions in a crash is acceptable.
    "synchronous_commit": "off",
    "log_min_messages": "warning",
    # Each transaction's commit time (pg_xact_commit_timestamp), what Debezium's source.ts_ms carries: the
    # tests check history models' valid_from/valid_to against it. A server setting, read at start only.
    "track_commit_timestamp": "on",
}


def port() -> int:
    return int(os.environ.get(PORT_ENV, str(DEFAULT_PORT)))


def folder() -> Path:
    return state_dir() / "postgres"


def data_dir() -> Path:
    """The cluster's data folder: in the state folder, or as root the folder held for it (module docstring)."""
    in_place = folder() / "data"
    if run_as() is None or (not in_place.is_symlink() and (in_place / "PG_VERSION").exists()):
        return in_place
    return held_folder(state_dir(), held_root()) / "data"


def held_root() -> Path:
    """Where the server's user keeps the data of root's clusters: its home's `zync` folder."""
    return Path(pwd.getpwnam(SERVER_USER).pw_dir) / "zync"


def held_folder(state: Path, root: Path) -> Path:
    """The folder holding the data of the cluster of one state folder: a name derived from its resolved
    path, so that the same state folder finds it again and two state folders never share one."""
    return root / hashlib.sha256(str(state.resolve()).encode()).hexdigest()[:12]


def owned(held: Path) -> bool:
    """Whether the state folder recorded in `held` still links to its data (else it is stale)."""
    try:
        state = Path((held / STATE_RECORD).read_text().strip())
        return os.readlink(state / "postgres" / "data") == str(held / "data")
    except OSError:
        return False


def server_pid(data: Path) -> int | None:
    """The pid of a server running on `data` (from its postmaster.pid), or None."""
    try:
        pid = int((data / "postmaster.pid").read_text().split("\n", 1)[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def remove_stale(root: Path) -> list[Path]:
    """Remove the folders under `root` that no state folder links to any more (their state folder was
    wiped or deleted) and on which no server runs. Returns those removed."""
    removed = []
    for held in sorted(root.iterdir()) if root.is_dir() else []:
        if not held.is_dir() or owned(held) or server_pid(held / "data") is not None:
            continue
        shutil.rmtree(held, ignore_errors=True)
        removed.append(held)
    return removed


def remove_held_data() -> Path | None:
    """Remove the folder holding this state folder's data, if it has one (`zync down --purge`); the server
    must be stopped. Returns the folder removed."""
    link = folder() / "data"
    if not link.is_symlink():
        return None
    held = Path(os.readlink(link)).parent
    # Only a folder of ours: a link edited by hand must not make zync delete anything else.
    if held.parent != held_root() or held.name != held_folder(state_dir(), held_root()).name:
        return None
    pid = server_pid(held / "data")
    if pid is not None:
        raise ZyncError(f"PostgreSQL (pid {pid}) still runs on {held / 'data'}: stop it first with `zync down`")
    shutil.rmtree(held, ignore_errors=True)
    link.unlink()
    return held


def bin_dir() -> Path:
    explicit = os.environ.get("ZYNC_POSTGRES_BIN")
    if explicit:
        return Path(explicit)
    versions = sorted((p for p in DEBIAN_ROOT.glob("*/bin") if (p / "postgres").exists()),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not versions:
        raise ZyncError(f"PostgreSQL is not installed (no {DEBIAN_ROOT}/<version>/bin/postgres): run `make setup`, "
                        "which installs Debian's `postgresql` package, or set ZYNC_POSTGRES_BIN to its bin folder")
    return versions[-1]


def run_as() -> str | None:
    """The user the server runs as: Debian's `postgres` when we are root, else ourselves (None)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise ZyncError("zync runs as root, PostgreSQL refuses to, and there is no `postgres` user to run it as: "
                        "install Debian's `postgresql` package (`make setup`) or run zync as a normal user") from None
    return SERVER_USER


def password() -> str:
    path = folder() / "password"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise ZyncError(f"PostgreSQL has no password file at {path}: start it with `zync up --connect`") from None


def _chown(path: Path, user: str | None) -> None:
    if user is not None:
        shutil.chown(path, user, user)


def _hold(user: str | None) -> Path:
    """As root: the folder of this state folder's cluster, linked from the state folder, made afresh
    unless the link already leads to it; returns the data folder inside it."""
    root = held_root()
    held = held_folder(state_dir(), root)
    link = folder() / "data"
    if link.is_symlink() and os.readlink(link) == str(held / "data") and (held / STATE_RECORD).exists():
        return held / "data"
    pid = server_pid(held / "data")
    if pid is not None:
        raise ZyncError(f"a PostgreSQL server (pid {pid}) still runs on {held / 'data'}, the data of an earlier "
                        f"state folder at {state_dir()} that was removed while it ran: stop it "
                        f"(`kill -INT {pid}`) and start again")
    # Ours included: its state folder was wiped, so its data goes with it.
    remove_stale(root)
    shutil.rmtree(held, ignore_errors=True)
    for path in (root, held):
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        _chown(path, user)
    (held / STATE_RECORD).write_text(f"{state_dir().resolve()}\n")
    if link.is_symlink() or link.is_file():
        link.unlink()
    else:
        shutil.rmtree(link, ignore_errors=True)  # a half-done initdb in place
    link.symlink_to(held / "data")
    return held / "data"


def prepare() -> None:
    """initdb on first start: the data folder owned by the server's user, superuser `zync` with a new password."""
    user = run_as()
    folder().mkdir(parents=True, exist_ok=True)
    data = data_dir()
    if data != folder() / "data":
        data = _hold(user)  # not data_dir()'s answer alone: data there may be a wiped state folder's
    if (data / "PG_VERSION").exists():
        return
    shutil.rmtree(data, ignore_errors=True)  # a half-done earlier initdb
    data.mkdir(mode=0o700)
    _chown(data, user)
    secret = secrets.token_urlsafe(24)
    pw_path = folder() / "password"
    pw_path.write_text(secret + "\n")
    pw_path.chmod(0o600)
    # initdb reads the password as the server's user: a file of its own beside the data, removed after.
    pwfile = data.parent / "initdb-pwfile"
    pwfile.write_text(secret + "\n")
    pwfile.chmod(0o600)
    _chown(pwfile, user)
    try:
        result = subprocess.run(
            [str(bin_dir() / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={pwfile}",
             "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8"],
            capture_output=True, text=True, user=user, group=user, cwd="/",
        )
    finally:
        pwfile.unlink(missing_ok=True)
    if result.returncode != 0:
        shutil.rmtree(data, ignore_errors=True)
        hint = (f" (the `{user}` user must be able to reach {data}: every folder above it needs o+x)"
                if user else "")
        raise ZyncError(f"initdb into {data} failed{hint}: {(result.stdout + result.stderr).strip()[-600:]}")


def command() -> list[str]:
    settings = [arg for key, value in {**SETTINGS, "port": str(port())}.items() for arg in ("-c", f"{key}={value}")]
    return [str(bin_dir() / "postgres"), "-D", str(data_dir()), *settings]


def ready() -> bool:
    try:
        result = subprocess.run([str(bin_dir() / "pg_isready"), "-q", "-h", LOOPBACK, "-p", str(port())],
                                capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def service() -> Service:
    return Service(
        name="postgres", port=port(), command=command() if _installed() else ["false"], cwd=Path("/"),
        prepare=prepare, ready=ready, user=run_as() if _installed() else None,
        data=data_dir() if _installed() else None,
        # SIGINT is PostgreSQL's fast shutdown; SIGTERM (smart) would wait for
        # Debezium's replication connections to go away.
        stop_signal=signal.SIGINT, env_var=PORT_ENV,
    )


def _installed() -> bool:
    try:
        bin_dir()
        return True
    except ZyncError:
        return False


def _client_env() -> dict[str, str]:
    return {**os.environ, "PGPASSWORD": password(), "PGCONNECT_TIMEOUT": "10"}


def psql(sql: str, database: str = "postgres", *, quiet: bool = True) -> str:
    """Run SQL (one or several statements) with psql, stop at the first error; return its unaligned output."""
    args = [str(bin_dir() / "psql"), "-X", "-h", LOOPBACK, "-p", str(port()), "-U", USER, "-d", database,
            "-v", "ON_ERROR_STOP=1", "-A", "-t", "-f", "-"]
    if quiet:
        args.insert(1, "-q")
    result = subprocess.run(args, input=sql, capture_output=True, text=True, env=_client_env())
    if result.returncode != 0:
        raise ZyncError(f"psql on database {database!r} at {LOOPBACK}:{port()} failed: {result.stderr.strip()}\n"
                        f"    SQL: {sql.strip()[:500]}")
    return result.stdout


def query(sql: str, database: str = "postgres") -> list[dict]:
    """The rows of one SELECT as dicts, through PostgreSQL's own JSON rendering of each value
    (numbers as Decimal, so numeric keeps every digit)."""
    out = psql(f"select coalesce(json_agg(q), '[]'::json) from ({sql.rstrip().rstrip(';')}) q", database)
    return json.loads(out, parse_float=Decimal)


def database_exists(name: str) -> bool:
    return bool(query(f"select 1 from pg_database where datname = '{name}'"))


def ensure_database(name: str) -> None:
    if not database_exists(name):
        psql(f'create database "{name}"')


def drop_database(name: str, timeout_s: float = 30.0) -> None:
    """Drop a database and its replication slots. A slot still held by a (deleted) connector's
    WAL sender is released by ending that backend first."""
    deadline = time.monotonic() + timeout_s
    while True:
        slots = query(f"select slot_name, active_pid from pg_replication_slots where database = '{name}'")
        try:
            for slot in slots:
                if slot["active_pid"] is not None:
                    psql(f"select pg_terminate_backend({int(slot['active_pid'])})")
                psql(f"select pg_drop_replication_slot('{slot['slot_name']}')")
            break
        except ZyncError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    psql(f'drop database if exists "{name}" with (force)')
