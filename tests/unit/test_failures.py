"""The record of what a running `zync run` fails at, as `zync etl status` reads it."""

from __future__ import annotations

from service.failures import Failures, failures_file


def test_a_failure_is_kept_until_it_recovers_and_a_new_run_starts_clean(tmp_path):
    path = failures_file(tmp_path, "local")
    run = Failures.start(path)
    run.failed("ingest", "pg.public.orders", "poison message at offset 7")
    run.failed("ingest", "pg.public.orders", "poison message at offset 7")
    run.failed("dbt", "orders_mirror", "boom")
    seen = Failures.read(path)
    assert seen["ingest:pg.public.orders"].failures == 2
    assert seen["ingest:pg.public.orders"].since == run["ingest:pg.public.orders"].since
    run.recovered("dbt", "orders_mirror")
    assert set(Failures.read(path)) == {"ingest:pg.public.orders"}
    assert Failures.start(path) == {} and Failures.read(path) == {}


def test_no_file_reads_as_no_failure(tmp_path):
    assert Failures.read(failures_file(tmp_path, "local")) == {}
