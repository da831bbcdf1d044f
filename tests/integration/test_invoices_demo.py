"""zync's invoices demo end to end on the real broker, registry, Spark/Delta and dbt.

After each batch, the NewInvoices topic must hold exactly the records of
zync's own demo output, kept byte for byte in
demo/invoices/zync-expected-staging-after-each-batch.txt (keys, values,
output offsets), and the output table exactly its done records. zync's demo
numbers input offsets from 1; Kafka numbers them from 0, so expected input
offsets are shifted down by one. Output offsets start at 0 in both.
"""

from __future__ import annotations

import hashlib

import pytest

from egress.to_kafka import Egress
from ingest.from_kafka import Ingest
from testkit.invoices import DEMO, EXPECTED, EXPECTED_FILE
from zync import kafka_client, topics

# The SHA-256 of zync's file (the project's seeds/zync-demo/expected-staging-after-each-batch.txt)
# when it was copied here: the expectations cannot drift from what zync printed unnoticed.
ZYNC_FILE_SHA256 = "1b0bf030809cdf5bec9dc9dd7ea1fa191f0538d37309b09e5e44c95022759dc1"
INPUT_TOPICS = ("Invoices", "InvoiceStatus")


def test_the_kept_copy_is_zyncs_file():
    # Only what the repository holds: a user's clone has no copy of zync's sources beside it.
    assert hashlib.sha256(EXPECTED_FILE.read_bytes()).hexdigest() == ZYNC_FILE_SHA256, (
        f"{EXPECTED_FILE} is no longer zync's demo output; the demo's expectations must stay zync's")


def test_the_expected_file_is_what_zync_printed():
    # Guards the parser (testkit.invoices): 8 output records in all, 12 input records done.
    outs, done = EXPECTED[4]
    assert [r["kafka"]["offset"] for r in outs] == list(range(8))
    assert len(done) == 12


@pytest.fixture(scope="module")
def demo(target, spark, dbt):
    for topic in (*INPUT_TOPICS, "NewInvoices"):
        assert not kafka_client.topic_exists(target, topic), f"{topic} exists before the demo ran"
    dbt("run-operation", "zync_drop_relations", "--args", "{names: [raw_invoices, raw_invoice_status, new_invoices]}")

    def load_and_run(batch: int) -> None:
        for topic in INPUT_TOPICS:
            file = DEMO / f"batch-{batch}" / f"{topic}.jsonl"
            if file.exists():
                with file.open() as f:
                    records = topics.read_json_lines(f, str(file))
                topics.produce(target, topic, records, DEMO / "schemas" / f"{topic}-key.avsc",
                               DEMO / "schemas" / f"{topic}-value.avsc")
        # What the topics hold now (exit_after 0, as a `zync run` cycle): the batch is produced already.
        Ingest(target, list(INPUT_TOPICS)).run(exit_after=0.0)
        dbt("run", "--select", "new_invoices")
        Egress(target, "new_invoices").run()

    return load_and_run


def published(target) -> list[dict]:
    return [
        {"key": r["key"], "value": r["value"], "kafka": {"topic": r["kafka"]["topic"], "offset": r["kafka"]["offset"]}}
        for r in topics.consume(target, "NewInvoices", from_beginning=True, exit_after=0.0)  # what egress published
    ]


def done_rows(spark) -> set[tuple[str, int]]:
    rows = spark.sql("select kafka.topic, kafka.offset from zync.new_invoices where kind = 'done'").collect()
    return {(r[0], r[1]) for r in rows}


@pytest.mark.parametrize("batch", [1, 2, 3, 4])
def test_each_batch_gives_zyncs_staging_records(demo, target, spark, batch):
    demo(batch)
    expected_out, expected_done = EXPECTED[batch]
    assert published(target) == expected_out
    assert done_rows(spark) == expected_done


def test_dbt_run_with_nothing_new_adds_nothing(demo, spark, dbt):
    before = spark.sql("select count(*) from zync.new_invoices").collect()[0][0]
    versions_before = spark.sql("describe history zync.new_invoices").count()
    dbt("run", "--select", "new_invoices")
    assert spark.sql("select count(*) from zync.new_invoices").collect()[0][0] == before
    # An empty append may still commit; what matters is that no row was added.
    assert spark.sql("describe history zync.new_invoices").count() >= versions_before


def test_to_kafka_twice_publishes_each_record_once(demo, target):
    before = published(target)
    assert Egress(target, "new_invoices").run() == 0
    assert published(target) == before
    assert kafka_client.high_water_marks(target, "NewInvoices") == {0: len(before)}
