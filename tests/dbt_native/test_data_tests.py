"""The data tests the compiler attaches to every output model, and the run log, on real dbt + Delta.

One scratch project over zync's invoices transform goes through the life of
an output table: a run over demo batches 1-2, `dbt test` (passes; Dan's
invoice, pending for hours, warns), the table broken three ways (`dbt test`
and `dbt build` fail, each check on its own break), then restored and
`dbt build` over batch 3 (passes). The tests run in this order.
"""

from __future__ import annotations

import datetime as dt
import pytest

from tests.dbt_native.conftest import append_demo_batches
from testkit.invoices import EXPECTED

PREFIX = "dbtn"
THREE_HOURS_AGO = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=3)
CHECKS = ("one_done_row_per_input_record", "contiguous_output_offsets", "done_rows_have_input", "pending_age")


def check_node(check: str) -> str:
    return f"{PREFIX}_new_invoices__{check}"


def zync_counts(batch: int) -> tuple[int, dict[str, int]]:
    """zync's own figures after a demo batch: out records, and done records per input topic."""
    outs, done = EXPECTED[batch]
    per_topic: dict[str, int] = {}
    for topic, _ in done:
        per_topic[topic] = per_topic.get(topic, 0) + 1
    return len(outs), per_topic


def run_log_line(messages: list[str]) -> str:
    lines = [m for m in messages if m.startswith(f"zync {PREFIX}_new_invoices:")]
    assert len(lines) == 1, f"expected one zync log line for the model, got {lines}"
    return lines[0]


@pytest.fixture(scope="module")
def project(scratch_invoices, spark):
    append_demo_batches(scratch_invoices, spark, [1, 2], THREE_HOURS_AGO)
    scratch_invoices.first_run = scratch_invoices.dbt("run")
    return scratch_invoices


def test_the_run_log_says_what_the_run_consumed_and_wrote(project):
    outs, done = zync_counts(2)
    line = run_log_line(project.first_run.messages)
    total = sum(done.values())
    assert f"{total} input records done ({total} processed, 0 expired)" in line
    for topic, n in done.items():
        assert f"{PREFIX}{topic} {n} processed" in line
    assert f"{outs} out rows written to {PREFIX}NewInvoices (offsets 0-{outs - 1})" in line


def test_source_freshness_reports_the_newest_ingested_record(project, spark):
    """`dbt source freshness` reads the raw tables' Kafka timestamps: the ingest lag a user asks for."""
    result = project.dbt("source", "freshness")
    checked = {r.node.name: r for r in result.result.result.results}
    # The raw tables only: dead-letter tables (absent here) carry no freshness of their own.
    assert set(checked) == {f"{PREFIX}_raw_invoices", f"{PREFIX}_raw_invoice_status"}
    freshness = checked[f"{PREFIX}_raw_invoices"]
    newest = spark.sql(f"select max(kafka.timestamp) as t from {project.table('raw_invoices')}").first()["t"]
    assert str(freshness.status) == "pass"  # three hours old: within the day before it warns
    assert freshness.max_loaded_at.replace(tzinfo=None) == newest.replace(tzinfo=None)
    assert freshness.age > dt.timedelta(hours=2).total_seconds()


def test_dbt_test_passes_on_the_demo_and_warns_of_an_old_pending_record(project):
    result = project.dbt("test")
    statuses = result.statuses()
    assert {check_node(c) for c in CHECKS} <= set(statuses)
    assert [statuses[check_node(c)] for c in CHECKS[:3]] == ["pass"] * 3
    # Dan's invoice waits for its status, and it landed three hours ago (> the default 60 minutes).
    assert statuses[check_node("pending_age")] == "warn"
    failures = {r.node.name: r.failures for r in result.result.result}
    assert failures[check_node("pending_age")] == 1


def _break_table(spark, project) -> None:
    """Deliberate faults for each exactly-once check."""
    from pyspark.sql import functions as F

    table = project.table("new_invoices")
    rows = spark.table(table)
    invoice_done = rows.where((F.col("kind") == "done") & (F.col("kafka.topic") == project.topic("Invoices"))
                              & (F.col("kafka.offset") == 0))
    assert invoice_done.count() == 1
    # A record done that was never read: an offset past everything in the raw table.
    never_read = invoice_done.withColumn(
        "kafka", F.struct(F.col("kafka.topic").alias("topic"), F.col("kafka.partition").alias("partition"),
                          F.lit(999).cast("long").alias("offset")))
    never_read.write.format("delta").mode("append").saveAsTable(table)
    # A record done twice (`invoice_done` is read again: still the one row).
    invoice_done.write.format("delta").mode("append").saveAsTable(table)
    # Out rows lost at the end: the output cursor moved two past the last out row.
    output_cursor = rows.where((F.col("kind") == "cursor") & (F.col("kafka.topic") == project.topic("NewInvoices")))
    last = rows.where("kind = 'out'").agg(F.max("kafka.offset")).collect()[0][0]
    output_cursor.orderBy(F.col("kafka.offset").desc()).limit(1).withColumn(
        "kafka", F.struct(F.col("kafka.topic").alias("topic"), F.col("kafka.partition").alias("partition"),
                          F.lit(last + 3).cast("long").alias("offset"))
    ).write.format("delta").mode("append").saveAsTable(table)
    # A hole in the output offsets.
    spark.sql(f"delete from {table} where kind = 'out' and kafka.offset = 1")


@pytest.fixture
def broken(project, spark):
    """The output table with the faults, restored to its last good version afterwards."""
    table = project.table("new_invoices")
    version = spark.sql(f"describe history {table}").agg({"version": "max"}).collect()[0][0]
    try:
        _break_table(spark, project)
        yield project
    finally:
        spark.sql(f"restore table {table} to version as of {version}")


def _assert_each_check_caught_its_fault(result) -> None:
    assert not result.success
    failures = {r.node.name: (str(r.status), r.failures) for r in result.result.result}
    assert failures[check_node("one_done_row_per_input_record")] == ("fail", 1)
    assert failures[check_node("done_rows_have_input")] == ("fail", 1)
    # Offset 2 follows 0, and the output cursor points past the last out row.
    assert failures[check_node("contiguous_output_offsets")] == ("fail", 2)


def test_dbt_test_fails_on_broken_data(broken):
    # A threshold above three hours: the old pending record no longer warns.
    result = broken.dbt("test", "--vars", "{zync_pending_warn_after_minutes: 600}", expect_success=False)
    _assert_each_check_caught_its_fault(result)
    assert result.statuses()[check_node("pending_age")] == "pass"


def test_dbt_build_fails_on_broken_data(broken):
    result = broken.dbt("build", expect_success=False)
    assert result.statuses()[f"{PREFIX}_new_invoices"] == "success"
    _assert_each_check_caught_its_fault(result)


def test_dbt_build_passes_on_new_records_and_logs_only_this_run(project, spark):
    append_demo_batches(project, spark, [3], dt.datetime.now(dt.timezone.utc))
    result = project.dbt("build")
    statuses = result.statuses()
    assert statuses[f"{PREFIX}_new_invoices"] == "success"
    # Dan's status came: nothing is pending any more.
    assert [statuses[check_node(c)] for c in CHECKS] == ["pass"] * 4
    outs_before, done_before = zync_counts(2)
    outs_after, done_after = zync_counts(3)
    line = run_log_line(result.messages)
    total = sum(done_after.values()) - sum(done_before.values())
    assert f"{total} input records done ({total} processed, 0 expired)" in line
    for topic, n in done_after.items():
        if n > done_before.get(topic, 0):
            assert f"{PREFIX}{topic} {n - done_before.get(topic, 0)} processed" in line
    assert (f"{outs_after - outs_before} out rows written to {PREFIX}NewInvoices "
            f"(offsets {outs_before}-{outs_after - 1})") in line
