"""`zync etl status` on demo-shaped tables: cursors, pending, expired, lag, and the output against Kafka."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.dbt_native.conftest import append_demo_batches, invoices_transform
from cli.main import main
from service import etl_status
from zync import topics

PREFIX = "dbtns"
LANDED = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=3)
OUTPUT_SCHEMA = ("kafka struct<topic: string, partition: int, offset: bigint>, kind string, key struct<ID: int>, "
                 "value struct<ID: int>, fields array<string>, status string, run_id string")


class Tables:
    prefix = PREFIX

    def table(self, name: str) -> str:
        return f"zync.{PREFIX}_{name}"

    def topic(self, name: str) -> str:
        return f"{PREFIX}{name}"


def output_rows(tables: Tables, out_offsets, done: dict[tuple[str, int], str], cursors: dict[str, int]) -> list:
    rows = [((tables.topic("NewInvoices"), 0, o), "out", (o,), (o,), ["ID"], None, "r1") for o in out_offsets]
    rows += [((tables.topic(t), 0, o), "done", None, None, None, status, "r1") for (t, o), status in done.items()]
    rows += [((tables.topic(t), 0, o), "cursor", None, None, None, None, "r2") for t, o in cursors.items()]
    return rows


@pytest.fixture(scope="module")
def transform_file(spark, tmp_path_factory):
    """Demo batches 1-2 landed three hours ago; an output table whose out rows 0-2 paired three invoices
    with their statuses. Dan's invoice (Invoices offset 3) waits; one status is marked expired."""
    tables = Tables()
    spark.sql("create database if not exists zync")
    for name in ("raw_invoices", "raw_invoice_status", "new_invoices"):
        spark.sql(f"drop table if exists {tables.table(name)}")
    append_demo_batches(tables, spark, [1, 2], LANDED)
    done = {("Invoices", 0): "processed", ("Invoices", 1): "processed", ("Invoices", 2): "processed",
            ("InvoiceStatus", 0): "processed", ("InvoiceStatus", 1): "processed", ("InvoiceStatus", 2): "expired"}
    (spark.createDataFrame(output_rows(tables, range(3), done, {}), OUTPUT_SCHEMA)
     .write.format("delta").saveAsTable(tables.table("new_invoices")))
    path = tmp_path_factory.mktemp(PREFIX) / "invoices.yml"
    path.write_text(invoices_transform(PREFIX))
    return path


def _by_topic(status: etl_status.TransformStatus) -> dict[str, etl_status.PartitionStatus]:
    return {i.topic.removeprefix(PREFIX): i.partitions[0] for i in status.inputs}


def test_without_cursor_rows_it_shows_pending_expired_and_the_oldest_age(target, transform_file):
    (status,) = etl_status.collect(target, [transform_file])
    inputs = _by_topic(status)
    assert inputs["Invoices"].cursor is None and inputs["InvoiceStatus"].cursor is None
    assert (inputs["Invoices"].latest_offset, inputs["Invoices"].pending, inputs["Invoices"].expired) == (3, 1, 0)
    assert (inputs["InvoiceStatus"].latest_offset, inputs["InvoiceStatus"].pending,
            inputs["InvoiceStatus"].expired) == (2, 0, 1)
    expected_age = (dt.datetime.now(dt.timezone.utc) - LANDED).total_seconds()
    assert abs(inputs["Invoices"].oldest_pending_age_s - expected_age) < 120
    assert inputs["InvoiceStatus"].oldest_pending_age_s is None
    assert status.output.last_offset == 2
    assert status.output.kafka_next_offset is None and "not created yet" in status.output.kafka_note

    text = etl_status.render([status])
    invoices_line = next(line for line in text.splitlines() if line.strip().startswith(f"{PREFIX}Invoices "))
    assert invoices_line.split()[1:3] == ["0", "none"]  # partition 0, cursor "none yet"
    assert f"{int(expected_age // 3600)}h " in invoices_line  # oldest pending: three hours and a bit


def test_with_cursor_rows_and_a_published_topic(spark, target, transform_file, capsys):
    tables = Tables()
    # A later run moved the cursors: everything below Invoices 3 and InvoiceStatus 3 is done.
    (spark.createDataFrame(output_rows(tables, [], {}, {"Invoices": 3, "InvoiceStatus": 3}), OUTPUT_SCHEMA)
     .write.format("delta").mode("append").saveAsTable(tables.table("new_invoices")))
    # Egress published two of the three out rows so far.
    topics.produce(target, tables.topic("NewInvoices"), [{"key": {"ID": n}, "value": {"ID": n}} for n in range(2)])

    (status,) = etl_status.collect(target, [transform_file])
    inputs = _by_topic(status)
    assert (inputs["Invoices"].cursor, inputs["Invoices"].behind, inputs["Invoices"].pending) == (3, 1, 1)
    assert (inputs["InvoiceStatus"].cursor, inputs["InvoiceStatus"].behind, inputs["InvoiceStatus"].pending) == (3, 0, 0)
    assert (status.output.kafka_next_offset, status.output.unpublished) == (2, 1)

    assert main(["etl", "status", str(transform_file)]) == 0
    printed = capsys.readouterr().out
    assert "1 out rows not published yet" in printed
    status_line = next(line for line in printed.splitlines() if line.strip().startswith(f"{PREFIX}InvoiceStatus "))
    assert status_line.split()[1:6] == ["0", "3", "2", "0", "0"]  # partition, cursor, latest, behind, pending


def test_a_missing_output_table_is_reported_not_a_crash(spark, target, tmp_path):
    path = tmp_path / "other.yml"
    path.write_text(invoices_transform(PREFIX).replace(f"model: {PREFIX}_new_invoices", f"model: {PREFIX}_never_built"))
    (status,) = etl_status.collect(target, [path], kafka=False)
    assert status.output.table_note and "dbt run --select dbtns_never_built" in status.output.table_note
    # Nothing is done for a model never built: every raw record is pending.
    assert _by_topic(status)["Invoices"].pending == 4


def test_a_mirror_file_shows_each_mirrors_cursor_and_lag(spark, target, transform_file, tmp_path, capsys):
    tables = Tables()
    mirror_file = tmp_path / "mirrors.yml"
    mirror_file.write_text(f"mirrors:\n  - model: {PREFIX}_invoices_mirror\n    topic: {tables.topic('Invoices')}\n"
                           f"    table: {PREFIX}_raw_invoices\n")
    spark.sql(f"drop table if exists {tables.table('invoices_mirror')}")
    (never_built,) = etl_status.collect(target, [mirror_file], kafka=False)
    assert never_built.note and f"dbt run --select {PREFIX}_invoices_mirror" in never_built.note
    assert [(p.partition, p.cursor, p.latest_offset, p.behind) for p in never_built.partitions] == [(0, None, 3, 4)]
    # A mirror whose base's last commit carries the cursor past Invoices offset 1 (as zync_mirror commits do).
    base = tables.table("invoices_mirror") + "__base"
    spark.sql(f"create table {base} (ID int, `_zync_kafka` struct<topic: string, "
              "partition: int, offset: bigint, timestamp: timestamp>) using delta")
    def commit_carrying(offset: int) -> int:
        spark.conf.set("spark.databricks.delta.commitInfo.userMetadata",
                       f'{{"zync_mirror": "{tables.table("invoices_mirror")}", "cursor": {{"0": {offset}}}}}')
        try:
            spark.sql(f"insert into {base} values (1, null)")
        finally:
            spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
        return spark.sql(f"describe history {base} limit 1").first()["version"]

    past_one = commit_carrying(1)
    (status,) = etl_status.collect(target, [mirror_file], kafka=False)
    # Offsets 2 and 3 are not folded: the mirror's view applies them over its base.
    assert [(p.partition, p.cursor, p.latest_offset, p.behind, p.not_folded) for p in status.partitions] == [
        (0, 1, 3, 2, 2)]
    # A fold past offset 3, then the base restored to the version before it: the mirror's next run reads
    # from offset 2 again (macros/mirror/cursor/zync_mirror_committed_cursor.sql), and so does the status.
    commit_carrying(3)
    (folded,) = etl_status.collect(target, [mirror_file], kafka=False)
    assert [(p.cursor, p.not_folded) for p in folded.partitions] == [(3, 0)]
    spark.sql(f"restore table {base} to version as of {past_one}")
    (restored,) = etl_status.collect(target, [mirror_file], kafka=False)
    assert [(p.cursor, p.not_folded) for p in restored.partitions] == [(1, 2)]
    # Transform files and mirror files are read alike (the default set holds both).
    assert main(["etl", "status", "--no-kafka", str(transform_file), str(mirror_file)]) == 0
    printed = capsys.readouterr().out
    assert f"{PREFIX}_invoices_mirror (mirror of {PREFIX}Invoices" in printed and "not folded" in printed
    # A mirror stored as a table under its own name (before mirrors had a base) reads alike.
    spark.sql(f"alter table {base} rename to {tables.table('invoices_mirror')}")
    (old_style,) = etl_status.collect(target, [mirror_file], kafka=False)
    assert [(p.cursor, p.not_folded) for p in old_style.partitions] == [(1, 2)] and "base" in old_style.note
    spark.sql(f"drop table if exists {tables.table('invoices_mirror')}")
