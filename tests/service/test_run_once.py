"""`zync run --once` (what cron or Airflow calls) on zync's invoices demo, in this process's engine.

After a batch one run gives exactly zync's NewInvoices stream; a cycle
with nothing new makes no Delta commit on any table and reports no work.
"""

from __future__ import annotations

import io

from service.run import Service
from service.status import RunStatus
from tests.service.conftest import SCHEMA, invoices_project


def quiet_service(target, project, **options) -> Service:
    return Service(target, root=project.path, status=RunStatus(stream=io.StringIO(), live=False), **options)


def test_run_once_after_each_batch_gives_zyncs_stream_and_an_idle_cycle_changes_nothing(target, spark, tmp_path):
    project = invoices_project(tmp_path, "Once")
    project.produce_batch(target, 1)
    assert quiet_service(target, project).run(once=True) == 0
    assert project.published(target) == project.expected(1)

    project.produce_batch(target, 2)
    service = quiet_service(target, project)
    try:
        assert {r.stage for r in service.cycle()} == {"ingest", "dbt", "egress"}
        assert project.published(target) == project.expected(2)
        # The mirror ran in the same cycles: one row per invoice created so far.
        mirror = spark.sql(f"select invoice_id from {SCHEMA}.{project.name('invoices_mirror')}").collect()
        assert sorted(r[0] for r in mirror) == [100, 101, 102, 103]

        versions = service.versions.versions(project.tables())
        assert None not in versions.values()
        assert service.cycle() == []  # nothing new: no stage did anything
        assert service.versions.versions(project.tables()) == versions
    finally:
        service.close()


def test_select_keeps_only_the_chosen_models_and_the_topics_they_read(target, spark, tmp_path):
    project = invoices_project(tmp_path, "Pick")
    service = quiet_service(target, project, select=project.name("invoices_mirror"))
    try:
        service.load()
        assert [m.name for m in service.models] == [project.name("invoices_mirror")]
        assert [i.topic for i in service.inputs()] == [project.name("Invoices")]
    finally:
        service.close()
