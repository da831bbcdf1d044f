"""zync's invoices demo as a project of its own, for `zync run`'s tests and the benchmarks.

Each test gets a project folder of its own (the demo's transforms with every
topic, table and model name prefixed, so they never meet the demo test's),
which links the real macros/, seeds/, profiles/, jars (.local/) and jvm/, as a
user's project holds them: `zync run` is pointed at it with ZYNC_PROJECT_DIR.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from compiler import compile_transforms, write_outputs
from testkit.scratch import seed_partial_parse
from zync import kafka_client, topics

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "zync"
DEMO = ROOT / "demo" / "invoices"
# zync's own output for its demo, kept with the demo so the tests run anywhere.
EXPECTED_FILE = DEMO / "zync-expected-staging-after-each-batch.txt"


def _zson_to_json(text: str) -> object:
    return json.loads(re.sub(r"([{,])([A-Za-z_][A-Za-z0-9_]*):", r'\1"\2":', text))


def expected_after_each_batch() -> dict[int, tuple[list[dict], set[tuple[str, int]]]]:
    """{batch: (out records in offset order, done input coordinates with Kafka's 0-based offsets)}.

    zync's demo numbers input offsets from 1; Kafka numbers them from 0, so input
    offsets are shifted down by one. Output offsets start at 0 in both."""
    expected: dict[int, tuple[list[dict], set[tuple[str, int]]]] = {}
    batch = 0
    for line in EXPECTED_FILE.read_text().splitlines():
        if line.startswith("=== "):
            batch = int(line[4:])
            expected[batch] = ([], set())
        elif line.endswith("(=done)"):
            kafka = _zson_to_json(line[: -len("(=done)")])["kafka"]
            expected[batch][1].add((kafka["topic"], kafka["offset"] - 1))
        elif line.startswith("{"):
            expected[batch][0].append(_zson_to_json(line))
    return expected


EXPECTED = expected_after_each_batch()
_NAMES = re.compile(r"\b(InvoiceStatus|NewInvoices|Invoices|raw_invoice_status|raw_invoices|new_invoices|invoices_mirror)\b")
_LINKED = ("macros", "seeds", "profiles", ".local", "jvm")


@dataclass
class InvoicesProject:
    path: Path
    prefix: str  # CamelCase, e.g. "Once": topic OnceInvoices, table once_raw_invoices

    def name(self, original: str) -> str:
        """The project's name for one of the demo's topics, tables or models."""
        return self.prefix + original if original[0].isupper() else f"{self.prefix.lower()}_{original}"

    @property
    def output_topic(self) -> str:
        return self.name("NewInvoices")

    def tables(self) -> list[str]:
        # The mirror's name is a view; its Delta table is its base.
        return [f"{SCHEMA}.{self.name(t)}" for t in ("raw_invoices", "raw_invoice_status", "new_invoices",
                                                     "invoices_mirror__base")]

    def produce(self, target, topic: str, records: list[dict], partitions: int = 1) -> None:
        """Produce records to one of the demo's topics (by its demo name) with the demo's schemas.

        partitions: how many the topic gets if this creates it (records go to one by their key's hash)."""
        topics.produce(target, self.name(topic), records, DEMO / "schemas" / f"{topic}-key.avsc",
                       DEMO / "schemas" / f"{topic}-value.avsc", partitions=partitions)

    def produce_batch(self, target, batch: int) -> None:
        for topic in ("Invoices", "InvoiceStatus"):
            file = DEMO / f"batch-{batch}" / f"{topic}.jsonl"
            if file.exists():
                with file.open() as f:
                    self.produce(target, topic, list(topics.read_json_lines(f, str(file))))

    def expected(self, batch: int) -> list[dict]:
        """zync's own NewInvoices stream after `batch`, on this project's output topic."""
        return [{**r, "kafka": {**r["kafka"], "topic": self.output_topic}} for r in EXPECTED[batch][0]]

    def published(self, target) -> list[dict]:
        """The output topic as it stands: key, value and Kafka coordinates of every record."""
        if not kafka_client.topic_exists(target, self.output_topic):
            return []
        return [{"key": r["key"], "value": r["value"],
                 "kafka": {"topic": r["kafka"]["topic"], "offset": r["kafka"]["offset"]}}
                for r in topics.consume(target, self.output_topic, from_beginning=True, exit_after=0.0)]

    def published_count(self, target) -> int:
        if not kafka_client.topic_exists(target, self.output_topic):
            return 0
        return kafka_client.high_water_marks(target, self.output_topic)[0]


def invoices_transforms(prefix: str) -> dict[str, str]:
    """The invoices demo's transform files (name -> text), every topic, table and model renamed with `prefix`."""
    names = InvoicesProject(Path(), prefix)
    return {source.name: _NAMES.sub(lambda m: names.name(m.group(1)), source.read_text())
            for source in sorted((DEMO / "transforms").glob("*.yml"))}


def invoices_project(base: Path, prefix: str) -> InvoicesProject:
    """A user's project in base/<prefix> whose transforms are the invoices demo's, renamed with `prefix`."""
    project = InvoicesProject(base / prefix.lower(), prefix)
    (project.path / "transforms").mkdir(parents=True)
    shutil.copy(ROOT / "dbt_project.yml", project.path / "dbt_project.yml")
    for name in _LINKED:
        (project.path / name).symlink_to(ROOT / name)
    paths = []
    for name, text in invoices_transforms(prefix).items():
        path = project.path / "transforms" / name
        path.write_text(text)
        paths.append(path)
    write_outputs(compile_transforms(paths, project.path), project.path)
    seed_partial_parse(project.path)
    return project
