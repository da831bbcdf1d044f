"""The whole-database demo's steps (run.sh calls them): its project, its SQL, its connector, and the
wait until every table's mirror equals the table in PostgreSQL.

A shop's database of 20 tables is captured by one Debezium connector (every
table of schema public, and those created later: its publication is FOR ALL
TABLES) and mirrored by one `zync run` from one mirror entry naming
`topics:`. A table created while it runs gets its mirror without a restart.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from stack import connect, postgres
from zync.config import load_target
from zync.errors import ZyncError

ROOT = Path(__file__).resolve().parents[2]
SQL = Path(__file__).resolve().parent / "sql"
SOURCE_DB, TOPIC_PREFIX, CONNECTOR = "shop", "shop", "demo-shop-source"
# The user's project: the repository's dbt setup, and one mirror file.
MIRRORS = """\
# Every table of the shop's database, and any table added later, as a mirror named after the table.
mirrors:
  - topics: 'shop\\.public\\..*'
    name: '{table}'
"""
SHARED = ("macros", "seeds", "profiles", ".local", "jvm")


def make_project(folder: Path) -> None:
    """A user's dbt project in `folder`: the repository's dbt_project.yml, macros and profiles, one mirror file."""
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "transforms").mkdir(parents=True)
    shutil.copy(ROOT / "dbt_project.yml", folder / "dbt_project.yml")
    for name in SHARED:
        (folder / name).symlink_to(ROOT / name)
    (folder / "transforms" / "shop.yml").write_text(MIRRORS)


def start() -> None:
    """Debezium's PostgreSQL connector over every table of schema public, new ones included."""
    target = load_target()
    connect.Connect().run(CONNECTOR, connect.postgres_source(
        target, CONNECTOR, SOURCE_DB, [r"public\..*"], TOPIC_PREFIX,
        **{"publication.autocreate.mode": "all_tables"}))


def source_tables() -> list[str]:
    return [r["tablename"] for r in postgres.query(
        "select tablename from pg_tables where schemaname = 'public' order by 1", SOURCE_DB)]


def wait_mirrors(timeout: float) -> None:
    """Until every table's mirror holds exactly the table's rows, value by value; progress on the way."""
    from zync.spark import spark_session

    spark = spark_session(load_target())
    schema = load_target().schema
    deadline = time.monotonic() + timeout
    last = None
    equal: list[str] = []  # once equal, a table stays so until the next step's SQL: not read again
    while True:
        tables = source_tables()
        for table in sorted(set(tables) - set(equal)):
            expected = postgres.query(f"select id, name, qty, price::text as price, active from {table} order by id",
                                      SOURCE_DB)
            if not spark.catalog.tableExists(f"{schema}.{table}"):
                continue
            found = [r.asDict() for r in spark.sql(
                f"select id, name, qty, cast(price as string) as price, active from {schema}.{table} order by id"
            ).collect()]
            if found == expected:
                equal.append(table)
        line = f"{len(equal)} of {len(tables)} tables mirrored exactly"
        if line != last:
            print(line, flush=True)
            last = line
        if len(equal) == len(tables):
            return
        if time.monotonic() > deadline:
            missing = sorted(set(tables) - set(equal))
            raise ZyncError(f"after {timeout:.0f}s these mirrors differ from their tables: {', '.join(missing)} "
                            "(zync run's log says why)")
        connect.Connect().check(CONNECTOR)
        time.sleep(5)  # the reads compete with zync run for the machine: not too often


def main() -> int:
    top = argparse.ArgumentParser(description=__doc__)
    verbs = top.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("project", help="make the user's project folder")
    p.add_argument("folder", type=Path)
    p.set_defaults(run=lambda args: make_project(args.folder))
    p = verbs.add_parser("sql", help="run one of the demo's SQL files in the shop's database")
    p.add_argument("file")
    p.set_defaults(run=lambda args: (postgres.ensure_database(SOURCE_DB),
                                     print(postgres.psql((SQL / args.file).read_text(), SOURCE_DB), end="")))
    verbs.add_parser("start", help="start the Debezium connector").set_defaults(run=lambda args: start())
    p = verbs.add_parser("wait-mirrors", help="wait until every table's mirror equals the table")
    p.add_argument("--timeout", type=float, default=600)
    p.set_defaults(run=lambda args: wait_mirrors(args.timeout))
    args = top.parse_args()
    try:
        args.run(args)
    except ZyncError as e:
        print(f"demo-database: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
