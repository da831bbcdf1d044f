"""dbt-native tests: a scratch dbt project per module (testkit/scratch.py), on the session's Spark,
with demo-shaped data. Tables and topics are prefixed dbtn_/dbtn so that they never meet the demo's.

The scratch project's dbt commands execute as `zync run` executes a small run of an output model
(service/engine_settings.py: `small_run_engine`, interpreted, adaptive execution off), as tests/etl's do: what
these tests assert (data tests, run log, freshness) does not depend on the plan, and the compiled
plan of a hand-run `dbt run` is what tests/integration, tests/service, tests/cluster and
tests/debezium run.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable

import pytest

from service.engine_settings import small_run_engine
from testkit.scratch import ROOT, ScratchProject, make_scratch_project, run_dbt

DEMO = ROOT / "demo" / "invoices"
INVOICES_YAML = ROOT / "demo" / "invoices" / "transforms" / "invoices.yml"


@pytest.fixture(scope="session")
def dbt_at(spark):
    """Run dbt in this process (on the session's SparkSession) against any project folder."""
    return run_dbt


def invoices_transform(prefix: str) -> str:
    """demo/invoices/transforms/invoices.yml with the scratch project's topics, tables and model."""
    text = INVOICES_YAML.read_text()
    for old, new in (("raw_invoice_status", f"{prefix}_raw_invoice_status"), ("raw_invoices", f"{prefix}_raw_invoices"),
                     ("new_invoices", f"{prefix}_new_invoices")):
        text = text.replace(f"table: {old}", f"table: {new}").replace(f"model: {old}", f"model: {new}")
    for topic in ("NewInvoices", "InvoiceStatus", "Invoices"):
        text = text.replace(f": {topic}", f": {prefix}{topic}")
    return text


@pytest.fixture(scope="module")
def scratch_invoices(tmp_path_factory, spark, request) -> ScratchProject:
    """A scratch project over the invoices transform (the module's PREFIX), with none of its tables yet."""
    prefix = getattr(request.module, "PREFIX")
    root = tmp_path_factory.mktemp(prefix) / "project"
    project = make_scratch_project(root, {"invoices.yml": invoices_transform(prefix)}, spark=spark, prefix=prefix,
                                   engine=small_run_engine)
    spark.sql("create database if not exists zync")
    for name in ("raw_invoices", "raw_invoice_status", "new_invoices"):
        spark.sql(f"drop table if exists {project.table(name)}")
    return project


# --- demo-shaped raw tables ------------------------------------------------------

def _kafka_type():
    """The raw tables' envelope, exactly as `zync from-kafka` writes it."""
    from zync.envelope import kafka_struct

    return kafka_struct()


def demo_records(topic: str, batches: Iterable[int]) -> list[dict]:
    """zync's demo records of one topic (Invoices or InvoiceStatus) in the given batches, in order."""
    records = []
    for batch in batches:
        file = DEMO / f"batch-{batch}" / f"{topic}.jsonl"
        if file.exists():
            records += [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
    return records


def append_raw(spark, table: str, topic: str, demo_topic: str, records: list[dict], timestamp: dt.datetime) -> None:
    """Append records to a raw table as `zync from-kafka` lands them: partition 0, offsets following on."""
    from pyspark.sql import types as T

    from testkit.avro_values import value_converter
    from zync.avro_types import spark_type

    key_schema = json.loads((DEMO / "schemas" / f"{demo_topic}-key.avsc").read_text())
    value_schema = json.loads((DEMO / "schemas" / f"{demo_topic}-value.avsc").read_text())
    key_of, value_of = value_converter(key_schema), value_converter(value_schema)
    first = 0
    if spark.catalog.tableExists(table):
        first = spark.sql(f"select coalesce(max(kafka.offset) + 1, 0) from {table}").collect()[0][0]
    schema = T.StructType([T.StructField("kafka", _kafka_type(), False),
                           T.StructField("key", spark_type(key_schema), True),
                           T.StructField("value", spark_type(value_schema), True)])
    rows = [((topic, 0, first + n, timestamp, 1, 2), key_of(r["key"]), value_of(r["value"]))
            for n, r in enumerate(records)]
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(table)


def append_demo_batches(project: ScratchProject, spark, batches: Iterable[int], timestamp: dt.datetime) -> None:
    batches = list(batches)
    for demo_topic, table in (("Invoices", "raw_invoices"), ("InvoiceStatus", "raw_invoice_status")):
        records = demo_records(demo_topic, batches)
        if records:
            append_raw(spark, project.table(table), project.topic(demo_topic), demo_topic, records, timestamp)
