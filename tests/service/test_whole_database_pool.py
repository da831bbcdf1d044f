"""A whole database through one `zync run` with a raw pool: every matching topic's records in one Delta
commit a cycle, each mirror reading its topic's raw view over the pool.

The same database as tests/service/test_whole_database.py: a table whose topic carries a
message that is not Avro stops alone; a table added while the run runs is mirrored live;
a mirror folds by its own topic's rows in the pool, not the pool's commits; a restart reads
nothing twice; `zync from-kafka` of a pooled topic fills the pool as `zync run` does.
"""

from __future__ import annotations

import io
import json

from cli import main as cli
from service import etl_status
from service.etl_status import render_failures
from service.run import Service
from tests.service import test_whole_database as whole_database
from tests.service.test_whole_database import cycles_until
from zync.progress import Progress

SCHEMA = "zync"
PREFIX = "pooldb.public."
POOL = f"{SCHEMA}.raw_pooldb"
MIRRORS = r"""
mirrors:
  - topics: 'pooldb\.public\..*'
    name: 'pooldb_{table}'
    pool: raw_pooldb
"""


def produce(target, table: str, changes: list[tuple[str, int, str | None]]) -> None:
    whole_database.produce(target, table, changes, prefix=PREFIX)


def mirror(spark, table: str) -> dict[int, str]:
    return whole_database.mirror(spark, table, name_prefix="pooldb_")


def pool_offsets(spark) -> list[tuple[str, int]]:
    return sorted((r[0], r[1]) for r in spark.sql(f"select kafka.topic, kafka.offset from {POOL}").collect())


def test_a_pool_takes_a_cycle_of_every_table_in_one_commit(target, spark, tmp_path, monkeypatch, capsys):
    project = whole_database.database(target, spark, tmp_path / "db", MIRRORS, PREFIX)
    log = io.StringIO()
    with Service(target, root=project.path, status=Progress.for_run(stream=log, live=False)) as service:
        service.discovery.every_s = 0
        cycles_until(service, lambda: {"pooldb_customers", "pooldb_orders"} <= {m.name for m in service.models}
                     and spark.catalog.tableExists(f"{SCHEMA}.pooldb_orders"))
        assert mirror(spark, "customers") == {1: "anna", 2: "bob"}
        assert mirror(spark, "orders") == {2: "bob"}
        sources = (project.path / "models" / "raw" / "__sources.yml").read_text()
        assert "zync_pool: raw_pooldb" in sources and "raw_pooldb_public_customers__dead_letters" not in sources
        # Both tables' records came in one commit of one file (the pool's create is version 0).
        history = spark.sql(f"describe history {POOL}").collect()
        writes = [h for h in history if h["operation"] == "WRITE"]
        assert len(writes) == 1 and writes[0]["operationMetrics"]["numFiles"] == "1"
        # The raw tables are views over the pool; the broken table's topic stopped alone, before its record.
        assert spark.catalog.getTable(f"{SCHEMA}.raw_pooldb_public_customers").tableType == "VIEW"
        assert {t for t, _ in pool_offsets(spark)} == {PREFIX + "customers", PREFIX + "orders"}
        errors = [json.loads(line) for line in log.getvalue().splitlines() if '"error"' in line]
        assert {e["of"] for e in errors} == {PREFIX + "broken"}
        assert PREFIX + "broken" in render_failures(project.path, target.name)

        # A change, and a table added now: one more commit carries both.
        produce(target, "customers", [("u", 2, "bobby")])
        produce(target, "invoices", [("r", 7, "cy"), ("c", 8, "dee")])
        cycles_until(service, lambda: spark.catalog.tableExists(f"{SCHEMA}.pooldb_invoices")
                     and mirror(spark, "customers")[2] == "bobby")
        assert mirror(spark, "invoices") == {7: "cy", 8: "dee"}

        # A pooled mirror folds by its own topic's rows in the pool, not the pool's commits: orders,
        # unchanged since, does not.
        service.folds.after_commits, service.folds.after_rows = 1, 2
        produce(target, "customers", [("c", 3, "cy")])
        cycles_until(service, lambda: spark.catalog.tableExists(f"{SCHEMA}.pooldb_customers__base"))
        assert not spark.catalog.tableExists(f"{SCHEMA}.pooldb_orders__base")
        assert mirror(spark, "customers") == {1: "anna", 2: "bobby", 3: "cy"}
        produce(target, "customers", [("d", 3, None)])
        cycles_until(service, lambda: 3 not in mirror(spark, "customers"))
    before = pool_offsets(spark)
    assert before == sorted(set(before))  # no record twice

    # A restart resumes from the pool: nothing more to read, nothing read twice.
    produce(target, "orders", [("u", 2, "bo")])
    with Service(target, root=project.path, status=Progress.for_run(stream=io.StringIO(), live=False)) as again:
        cycles_until(again, lambda: mirror(spark, "orders") == {2: "bo"})
    after = pool_offsets(spark)
    assert after == sorted(set(after)) and after == sorted(before + [(PREFIX + "orders", 3)])

    # `zync from-kafka` of a pooled topic fills its pool as zync run does, once.
    produce(target, "orders", [("u", 2, "b2")])
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(project.path))
    orders = ["from-kafka", "--topic", PREFIX + "orders", "--exit-after", "0"]
    assert cli.main(orders) == 0
    assert pool_offsets(spark) == sorted(after + [(PREFIX + "orders", 4)])
    assert spark.sql(f"select count(*) from {SCHEMA}.raw_pooldb_public_orders where kafka.offset = 4").first()[0] == 1
    assert cli.main(orders) == 0 and pool_offsets(spark) == sorted(after + [(PREFIX + "orders", 4)])
    # `zync etl status` reads each pooled mirror's raw view: its cursor and what is not folded yet.
    statuses = {s.model: s for s in etl_status.collect(target, [project.path / "transforms" / "db.yml"])}
    assert [(p.partition, p.cursor, p.latest_offset, p.not_folded) for p in statuses["pooldb_orders"].partitions] \
        == [(0, None, 4, 5)]
    (customers,) = statuses["pooldb_customers"].partitions
    assert customers.latest_offset == 5 and customers.cursor is not None and customers.cursor >= 4
    assert "no raw table yet" in statuses["pooldb_broken"].note
    capsys.readouterr()
    # Its raw view named as a table, a pooled and an unpooled topic in one command, a shaper: refused, saying why.
    assert cli.main(orders + ["--table", "raw_pooldb_public_orders"]) == 1
    assert "is a view, not a Delta table" in capsys.readouterr().err
    assert cli.main(orders + ["--topic", "someone_elses"]) == 1
    assert "ingest them with a command each" in capsys.readouterr().err
    assert cli.main(orders + ["--errors-tolerance", "all"]) == 1
    assert "not for topics kept in a raw pool" in capsys.readouterr().err
    assert pool_offsets(spark) == sorted(after + [(PREFIX + "orders", 4)])
