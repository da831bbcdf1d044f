"""`zync run --once` (what cron or Airflow calls) on zync's invoices demo, in this process's engine.

After a batch one run gives exactly zync's NewInvoices stream (the service's
test follows all four batches); a cycle with nothing new makes no Delta commit
on any table and reports no work, in the same process and after a restart
(whose first cycle warms the engine apart from the project's tables);
a compaction changes no row and makes nothing run again. The mirror's view shows
new changes before a cycle folds them into its base.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from urllib.parse import urlparse

from service.run import Service
from testkit.invoices import SCHEMA, invoices_project
from testkit.scratch import set_dbt_vars
from zync.progress import Progress


def quiet_service(target, project, **options) -> Service:
    return Service(target, root=project.path, status=Progress.for_run(stream=io.StringIO(), live=False), **options)


def test_run_once_gives_zyncs_stream_and_an_idle_cycle_changes_nothing(target, spark, tmp_path):
    project = invoices_project(tmp_path, "Once")
    project.produce_batch(target, 1)
    # what a model that failed in an earlier cycle leaves behind: its invocation's note, never taken
    spark.conf.set("zync.note.cursors.an_earlier_invocation__zync__failed_model", "{}")
    with quiet_service(target, project) as service:
        assert service.run(once=True) == 0
        assert [r.key for r in spark.sql("set").collect() if r.key.startswith("zync.note.")] == []
        # The cycle that moved batch 1, then the output model once more (its run wrote, so per-key order
        # may have left records for a next run), which writes nothing: --once ends drained.
        assert service.status.busy_cycles == 2 and not service.rerun
        assert project.published(target) == project.expected(1)
        # The mirror ran in the same cycle: one row per invoice created so far.
        mirror = spark.sql(f"select invoice_id from {SCHEMA}.{project.name('invoices_mirror')}").collect()
        assert sorted(r[0] for r in mirror) == [100, 101]

        versions = service.versions.versions(project.tables())
        assert None not in versions.values()
        assert service.cycle() == []  # nothing new: no stage did anything
        assert service.versions.versions(project.tables()) == versions

    # A restart with nothing new runs no model either (the versions each model's run saw are kept). Its
    # first cycle warms the engine on rows of its own, in a scratch folder that is gone after, then says
    # it is ready; no table of the project moved.
    with quiet_service(target, project) as restarted:
        assert restarted.cycle() == []
        assert restarted.versions.versions(project.tables()) == versions
        ready = [json.loads(line) for line in restarted.status.stream.getvalue().splitlines() if '"ready"' in line]
        assert len(ready) == 1 and ready[0]["warm_up_s"] > 0, ready
        warehouse = Path(urlparse(spark.conf.get("spark.sql.warehouse.dir")).path)
        assert warehouse.is_dir() and not list(warehouse.glob(".zync-warm-up-*"))
        assert restarted.cycle() == []

        # Merge-on-read: new changes to the mirror's raw table run the output model, not the mirror, whose
        # view shows them at once; --once folds it into its base, and no row seen by its name changes.
        project.produce_batch(target, 2)
        ran = next(r for r in restarted.cycle() if r.stage == "dbt").detail["models"]
        assert project.name("new_invoices") in ran and project.name("invoices_mirror") not in ran
        mirror = f"select invoice_id, customer, item from {SCHEMA}.{project.name('invoices_mirror')} order by 1"
        unfolded = [tuple(r) for r in spark.sql(mirror).collect()]
        assert [r[0] for r in unfolded] == [100, 101, 102, 103]
        base = f"{SCHEMA}.{project.name('invoices_mirror__base')}"
        before_fold = restarted.versions.version(base)
        assert restarted.run(once=True) == 0
        assert restarted.versions.version(base).version > before_fold.version
        assert [tuple(r) for r in spark.sql(mirror).collect()] == unfolded


def test_select_keeps_only_the_chosen_models_and_the_topics_they_read(target, spark, tmp_path):
    project = invoices_project(tmp_path, "Pick")
    with quiet_service(target, project, select=project.name("invoices_mirror")) as service:
        service.load()
        assert [m.name for m in service.models] == [project.name("invoices_mirror")]
        assert [i.topic for i in service.inputs()] == [project.name("Invoices")]


def test_once_drains_what_per_key_order_held_back_without_new_input(target, spark, tmp_path):
    """An invoice and its status, created and then paid, all in one batch: the status update's offset
    (1, in InvoiceStatus) comes before the denorm pair's driving offset (2, in Invoices). With no
    rounds of per-key order (var zync_order_rounds: 0, as a cascade deeper than the default 4 rounds
    would) the first dbt run emits the pair and holds the update back for its key's order; nothing
    new arrives after: the service must run the model again by itself (it once waited for new input
    forever)."""
    project = invoices_project(tmp_path, "Held")
    set_dbt_vars(project.path, zync_order_rounds=0)
    invoice = lambda i: {"key": {"ID": i}, "value": {  # noqa: E731
        "before": None, "op": "c", "after": {"ID": i, "customer": f"c{i}", "item": f"item{i}"}}}
    project.produce(target, "Invoices", [invoice(1), invoice(2), invoice(3)])
    status = {"ID": 30, "InvoiceID": 3, "status": "new"}
    project.produce(target, "InvoiceStatus", [
        {"key": {"ID": 30}, "value": {"before": None, "op": "c", "after": status}},
        {"key": {"ID": 30}, "value": {"before": status, "op": "u", "after": {**status, "status": "paid"}}}])
    with quiet_service(target, project, select=project.name("new_invoices")) as service:
        assert service.run(once=True) == 0
        published = [(r["key"], r["value"]) for r in project.published(target)]
        assert published == [
            ({"ID": 3}, {"ID": 3, "customer": "c3", "item": "item3", "invoice_status": "new"}),
            ({"ID": 3}, {"ID": 3, "invoice_status": "paid"}),  # a partial update: its fields only
        ]
        assert service.cycle() == []  # drained: invoices 1 and 2 wait for their statuses, as they should

        # Compaction of every table with a commit since its last compaction (--compact-after 1): the
        # output's two writing runs left two files in each of its partitions. Fewer files, the same
        # rows, and nothing runs or is published again for it.
        service.compact_after = 1
        compacted = {}
        while (report := service.compact()) is not None:  # a few tables a cycle: as many as it takes
            compacted.update(report.detail["tables"])
        output = f"{SCHEMA}.{project.name('new_invoices')}"
        assert compacted[output]["files_removed"] > compacted[output]["files_added"] > 0, compacted
        for table in (t for t, done in compacted.items() if done["files_removed"]):
            latest = spark.sql(f"describe history {table} limit 1").first()
            assert latest["operation"] == "OPTIMIZE"
            before, after = (f"select * from {table} version as of {v}" for v in (latest["version"] - 1,
                                                                                  latest["version"]))
            assert spark.sql(f"{before} except all {after}").count() == 0, table
            assert spark.sql(f"{after} except all {before}").count() == 0, table
        assert service.cycle() == []
    assert [(r["key"], r["value"]) for r in project.published(target)] == published
