"""The whole path on real connectors: PostgreSQL -> Debezium's source -> zync (`zync run --once` in
this process: ingest, the invoices ETL model, egress) -> Debezium's JDBC sink -> a table of a second
PostgreSQL database.

The steps are `make demo-postgres`'s (demo/postgres/connectors.py: its SQL files, connectors and
waits), under names of this test's own. After each step the sink's table must equal the denormalised
state computed by PostgreSQL from the source tables the SQL left, not from anything zync wrote:
an invoice with its status, once both exist; partial updates change only their columns; a deleted
invoice's row is gone. Before step 4 the source connector's Invoices records are delivered a second
time, byte for byte (Debezium after a task crash): the replayed snapshot records of invoices that
were paired long ago must not hold back step 5's edit and delete (they did, before replays were
recognised: the sink kept the old item and the deleted invoice).
"""

from __future__ import annotations

import io

from demo.postgres import connectors
from service.run import Service
from testkit.invoices import SCHEMA, invoices_project
from zync.progress import Progress

REPLAY_BEFORE_STEP = 4  # (1-based) after three steps every invoice of the snapshot has been paired


def run_steps(debezium, target, project, names: connectors.Names, model: str) -> tuple[int, list[dict]]:
    """The demo's steps, one `zync run --once` each, the sink's table checked after each; returns how many
    records were replayed and the last expected state."""
    replayed = 0
    expected: list[dict] = []
    log = io.StringIO()
    with Service(target, root=project.path, select=model, status=Progress.for_run(stream=log, live=False)) as service:
        for step, (file, _) in enumerate(connectors.STEPS, start=1):
            if step == REPLAY_BEFORE_STEP:
                replayed = debezium.replay(names.topics["invoices"], 0)
            debezium.psql((connectors.SQL / file).read_text(), names.source_db)
            if step == 1:  # its rows exist before the connector starts: they arrive as its snapshot
                debezium.connectors += [names.source, names.sink]
                connectors.start_connectors(target, names)
            counts = names.counts(step - 1)
            counts[names.topics["invoices"]] += replayed
            connectors.wait_records(target, counts, timeout=90, names=names)
            assert service.run(once=True) == 0, f"zync run --once failed after step {step} ({file}):\n{log.getvalue()}"
            connectors.wait_sink(target, timeout=90, names=names)
            # computed by PostgreSQL from the source tables (connectors.DENORMALISED), not from zync's output
            expected = debezium.query(connectors.DENORMALISED, names.source_db)
            assert connectors.target_rows(names) == expected, f"after step {step} ({file})"
    return replayed, expected


def test_postgresql_to_postgresql_after_each_step_also_after_a_replay(debezium, target, spark, tmp_path):
    project = invoices_project(tmp_path, "E2e")
    names = connectors.Names(
        source="dbz-e2e-source", sink="dbz-e2e-sink", source_db="dbz_e2e_source", target_db="dbz_e2e_target",
        topic_prefix="dbze2e", output_topic=project.output_topic, target_table="new_invoices",
        topics={"invoices": project.name("Invoices"), "invoice_status": project.name("InvoiceStatus")})
    debezium.database(names.source_db)
    debezium.database(names.target_db)
    model = project.name("new_invoices")
    try:
        replayed, expected = run_steps(debezium, target, project, names, model)
    finally:
        for connector in (names.source, names.sink):
            debezium.delete(connector)
    assert replayed == 4  # the snapshot's two invoices and step 2's two
    assert [r["id"] for r in expected] == [100, 102, 103]  # 101 deleted, 100 edited: the replay held neither back
    statuses = spark.sql(f"select status, count(*) from {SCHEMA}.{model} where kind = 'done' "
                         "group by status").collect()
    assert dict((r[0], r[1]) for r in statuses)["replayed"] == replayed
