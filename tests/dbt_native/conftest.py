"""dbt-native tests: a scratch dbt project per module, on the session's Spark, with demo-shaped data.

A scratch project is the real project's dbt_project.yml and macros/ (linked)
with models compiled from a transform YAML written for the test, so the
committed models stay untouched. Tables and topics are prefixed dbtn_/dbtn
so that they never meet the demo's.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compiler import compile_transforms, write_outputs

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "invoices"
INVOICES_YAML = ROOT / "demo" / "invoices" / "transforms" / "invoices.yml"


@dataclass
class DbtRun:
    """A finished in-process dbt invocation: its result and the log lines it printed."""

    result: object
    messages: list[str] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return bool(self.result.success)

    def statuses(self) -> dict[str, str]:
        """{node name: status} of the nodes the command ran (run, test, build)."""
        return {r.node.name: str(r.status) for r in (self.result.result or [])}


@dataclass
class ScratchProject:
    root: Path
    prefix: str  # of its tables and topics
    run_dbt: Callable[..., DbtRun]

    def dbt(self, *args: str, expect_success: bool = True) -> DbtRun:
        return self.run_dbt(self.root, *args, expect_success=expect_success)

    def table(self, name: str) -> str:
        return f"zync.{self.prefix}_{name}"

    def topic(self, name: str) -> str:
        return f"{self.prefix}{name}"


@pytest.fixture(scope="session")
def dbt_at(spark):
    """Run dbt in this process against any project folder, capturing its log messages."""
    from dbt.cli.main import dbtRunner

    def run(project: Path, *args: str, expect_success: bool = True) -> DbtRun:
        messages: list[str] = []

        def collect(event) -> None:
            messages.append(event.info.msg)

        os.chdir(ROOT)
        result = dbtRunner(callbacks=[collect]).invoke(
            [*args, "--project-dir", str(project), "--profiles-dir", str(ROOT / "profiles")])
        done = DbtRun(result, messages)
        if expect_success and not done.success:
            raise AssertionError(f"dbt {' '.join(args)} failed: {result.exception or result.result}\n"
                                 + "\n".join(messages[-30:]))
        return done

    return run


def invoices_transform(prefix: str) -> str:
    """demo/invoices/transforms/invoices.yml with the scratch project's topics, tables and model."""
    text = INVOICES_YAML.read_text()
    for old, new in (("raw_invoice_status", f"{prefix}_raw_invoice_status"), ("raw_invoices", f"{prefix}_raw_invoices"),
                     ("new_invoices", f"{prefix}_new_invoices")):
        text = text.replace(f"table: {old}", f"table: {new}").replace(f"model: {old}", f"model: {new}")
    for topic in ("NewInvoices", "InvoiceStatus", "Invoices"):
        text = text.replace(f": {topic}", f": {prefix}{topic}")
    return text


def make_scratch_project(root: Path, transforms: dict[str, str]) -> None:
    """dbt_project.yml copied, macros/ and seeds/ linked, models compiled from `transforms`."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "dbt_project.yml", root / "dbt_project.yml")
    for folder in ("macros", "seeds"):
        (root / folder).symlink_to(ROOT / folder, target_is_directory=True)
    (root / "transforms").mkdir()
    paths = []
    for name, text in transforms.items():
        path = root / "transforms" / name
        path.write_text(text)
        paths.append(path)
    write_outputs(compile_transforms(paths, root), root)


@pytest.fixture(scope="module")
def scratch_invoices(tmp_path_factory, dbt_at, spark, request) -> ScratchProject:
    """A scratch project over the invoices transform (the module's PREFIX), with none of its tables yet."""
    prefix = getattr(request.module, "PREFIX")
    root = tmp_path_factory.mktemp(prefix) / "project"
    make_scratch_project(root, {"invoices.yml": invoices_transform(prefix)})
    project = ScratchProject(root, prefix, dbt_at)
    spark.sql("create database if not exists zync")
    for name in ("raw_invoices", "raw_invoice_status", "new_invoices"):
        spark.sql(f"drop table if exists {project.table(name)}")
    return project


# --- demo-shaped raw tables ------------------------------------------------------

def _kafka_type():
    """The raw tables' envelope, exactly as `zync from-kafka` writes it."""
    from ingest.table import kafka_struct

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

    from zync.avro_types import spark_type, value_converter

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
