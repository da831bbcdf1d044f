"""A whole database through one `zync run`: one mirror entry naming `topics:`, in this process's engine.

Three Debezium-shaped tables' topics match the entry; one of them carries a
message that is not Avro (errors.tolerance none): the other two are
mirrored and kept current while that one is reported, in the log and in
`zync etl status`. A fourth table's topic appears while the run runs: it is
mirrored without a restart and without a run of the others. A topic deleted
from the broker is reported and its mirror kept.
"""

from __future__ import annotations

import io
import json

from confluent_kafka import Producer

from service.etl_status import render_failures
from service.run import Service
from testkit.invoices import DEMO, ROOT
from testkit.scratch import make_scratch_project
from zync import kafka_client, topics
from zync.progress import Progress

SCHEMA = "zync"
PREFIX = "wholedb.public."
MIRRORS = r"""
mirrors:
  - topics: 'wholedb\.public\..*'
    name: 'wholedb_{table}'
"""


def produce(target, table: str, changes: list[tuple[str, int, str | None]], prefix: str = PREFIX) -> None:
    """(op, ID, customer) changes of one table, as Debezium writes them (a delete carries its before)."""
    records = []
    for op, key, customer in changes:
        row = {"ID": key, "customer": customer, "item": f"item{key}"}
        records.append({"key": {"ID": key}, "value": {
            "before": row if op == "d" else None, "after": None if op == "d" else row, "op": op, "ts_ms": None}})
    topics.produce(target, prefix + table, records, DEMO / "schemas" / "Invoices-key.avsc",
                   DEMO / "schemas" / "Invoices-value.avsc")


def mirror(spark, table: str, name_prefix: str = "wholedb_") -> dict[int, str]:
    return {r["ID"]: r["customer"]
            for r in spark.sql(f"select ID, customer from {SCHEMA}.{name_prefix}{table}").collect()}


def cycles_until(service: Service, done, most: int = 6) -> None:
    for _ in range(most):
        service.cycle()
        if done():
            return
    raise AssertionError(f"not done after {most} cycles")


def database(target, spark, folder, mirrors: str, prefix: str = PREFIX):
    """A scratch project mirroring `mirrors`, and its database's first changes: customers, orders, and a
    table whose topic's first message is not Avro."""
    project = make_scratch_project(folder, {"db.yml": mirrors}, spark=spark,
                                   topics=lambda: kafka_client.topic_names(target))
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    produce(target, "customers", [("r", 1, "ann"), ("r", 2, "bob"), ("u", 1, "anna")], prefix)
    produce(target, "orders", [("r", 1, "ann"), ("c", 2, "bob"), ("d", 1, None)], prefix)
    kafka_client.ensure_topic(target, prefix + "broken")
    poison = Producer(target.kafka)
    poison.produce(prefix + "broken", key=b"\x00\x00\x00\x00\x01", value=b"not avro at all")
    poison.flush()
    return project


def test_a_pattern_mirrors_every_table_takes_a_new_one_live_and_isolates_a_failing_one(target, spark, tmp_path):
    project = database(target, spark, tmp_path / "db", MIRRORS)
    log = io.StringIO()
    with Service(target, root=project.path, status=Progress.for_run(stream=log, live=False)) as service:
        service.discovery.every_s = 0  # look at the broker's topics every cycle
        ran_small: list[set[str]] = []
        choose_small = service.small_models
        service.small_models = lambda due: ran_small.append(choose_small(due)) or ran_small[-1]
        cycles_until(service, lambda: {"wholedb_customers", "wholedb_orders"} <= {m.name for m in service.models}
                     and spark.catalog.tableExists(f"{SCHEMA}.wholedb_orders"))
        assert mirror(spark, "customers") == {1: "anna", 2: "bob"}
        assert mirror(spark, "orders") == {2: "bob"}
        # A first build over a few raw rows ran interpreted; its raw rows are counted from the Delta log.
        assert {"wholedb_customers", "wholedb_orders"} <= set().union(*ran_small)
        # It made each mirror's view alone, over the raw changes: no base table until a first fold.
        assert spark.catalog.getTable(f"{SCHEMA}.wholedb_customers").tableType == "VIEW"
        assert not spark.catalog.tableExists(f"{SCHEMA}.wholedb_customers__base")
        assert {"wholedb_customers", "wholedb_orders"} <= service.deferred
        raw = f"{SCHEMA}.raw_wholedb_public_customers"
        assert service.versions.rows_appended(raw, service.versions.version(raw), most_commits=20) == 3
        assert service.versions.rows_appended(raw, service.versions.version(raw), most_commits=0) is None
        ran_small.clear()
        # The broken table stops alone, named with its error in the log and in `zync etl status`.
        assert "wholedb_broken" in {m.name for m in service.models}
        # Ingest stopped before the poison message (its first): nothing of it is in a raw table.
        assert not spark.catalog.tableExists(f"{SCHEMA}.raw_wholedb_public_broken")
        errors = [json.loads(line) for line in log.getvalue().splitlines() if '"error"' in line]
        assert {e["of"] for e in errors} == {PREFIX + "broken"}
        failing = render_failures(project.path, target.name)
        assert PREFIX + "broken" in failing and "ingest" in failing

        # The others stay current, and a table the connector starts capturing now gets its mirror.
        produce(target, "customers", [("u", 2, "bobby")])
        produce(target, "invoices", [("r", 7, "cy"), ("c", 8, "dee")])
        cycles_until(service, lambda: spark.catalog.tableExists(f"{SCHEMA}.wholedb_invoices")
                     and mirror(spark, "customers")[2] == "bobby")
        assert mirror(spark, "invoices") == {7: "cy", 8: "dee"}
        # The new table's first build was small; the mirrors built before are past their first build.
        assert "wholedb_invoices" in set().union(*ran_small)
        assert not {"wholedb_customers", "wholedb_orders"} & set().union(*ran_small)
        assert (project.path / "models" / "mirrors" / "wholedb_invoices.sql").exists()
        assert "new topics matching a mirror entry: wholedb.public.invoices" in log.getvalue()

        # A mirror made as its view alone makes its base at its first fold, due by its raw table's growth.
        service.folds.after_commits = 2
        produce(target, "customers", [("c", 3, "cy")])
        cycles_until(service, lambda: spark.catalog.tableExists(f"{SCHEMA}.wholedb_customers__base"))
        assert "wholedb_customers" not in service.deferred
        assert mirror(spark, "customers") == {1: "anna", 2: "bobby", 3: "cy"}
        base = spark.sql(f"select ID, customer from {SCHEMA}.wholedb_customers__base").collect()
        assert {r["ID"]: r["customer"] for r in base} == {1: "anna", 2: "bobby", 3: "cy"}
        produce(target, "customers", [("d", 3, None)])
        cycles_until(service, lambda: 3 not in mirror(spark, "customers"))
        assert mirror(spark, "customers") == {1: "anna", 2: "bobby"}

        # A topic deleted from the broker (a table dropped from the connector): reported, its mirror kept.
        admin = kafka_client.admin(target)
        for future in admin.delete_topics([PREFIX + "orders"]).values():
            future.result(timeout=30)
        cycles_until(service, lambda: "topics gone from the broker: wholedb.public.orders" in log.getvalue())
        assert mirror(spark, "orders") == {2: "bob"}
        assert "wholedb_orders" in {m.name for m in service.models}
