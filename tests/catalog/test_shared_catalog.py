"""The shared catalog: separate processes, each with its own SparkSession, use the same tables at once.

The other process is real: a Python process with its own SparkSession that
runs `zync from-kafka` while this one runs `dbt run`. A JVM start costs most
of a minute here, so the checks are gathered into that one process. Two
processes running the same model at once (the MERGE guard across processes)
are tested with `zync run` beside a hand-run `dbt run`
(tests/service/test_run_service.py).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path


from tests.etl.scratch import SCHEMA, append_raw, drop_tables, raw_row
from testkit.scratch import make_scratch_project
from stack import services
from zync import topics

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"


def transform(raw: str, topic: str, out: str) -> str:
    return f"""\
inputs:
  - {{topic: {topic}, table: {raw}}}
output: {{topic: {out}Topic, model: {out}}}
transforms:
  - type: stateless
    where: value.op = 'c'
    in: {topic}
    out: {out}Topic
    key: in.key
    value: {{id: in.value.after.id, name: in.value.after.name}}
"""


class Lines:
    """A child's stdout, read line by line on a thread, so the test can wait for a given line."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, process: subprocess.Popen, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            if process.poll() is not None or time.monotonic() > deadline:
                self._thread.join(5)
                raise AssertionError(f"no line with {text!r}; the process printed:\n" + "\n".join(self.lines[-60:]))
            time.sleep(0.1)

    def text(self) -> str:
        self._thread.join(30)
        return "\n".join(self.lines)


def test_status_shows_the_catalog(target):
    line = next(line for line in services.status(target) if line.startswith("catalog:"))
    assert f"up on 127.0.0.1:{os.environ['ZYNC_CATALOG_PORT']}" in line
    assert line.endswith("metastore_db)")


def test_without_the_catalog_a_job_and_dbt_say_to_start_it():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "ZYNC_CATALOG_PORT": str(port)}
    message = f"the catalog at 127.0.0.1:{port} does not answer: run `zync up`"
    for command in ([str(BIN / "zync"), "from-kafka", "--topic", "catalog_absent", "--exit-after", "1s"],
                    [str(BIN / "dbt"), "run", "--select", "new_invoices"]):  # dbt: the plugin dbt_zync/
        started = time.monotonic()
        result = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode != 0
        assert message in result.stdout + result.stderr, (result.stdout + result.stderr)[-3000:]
        # Before starting Spark, whose Hive client would retry for half a minute.
        assert time.monotonic() - started < 30


def test_a_process_ingests_while_this_one_runs_dbt_and_each_sees_the_others_tables(target, spark, tmp_path):
    uid = uuid.uuid4().hex[:8]
    mine, raw, out, ingested = (f"catalog_mine_{uid}", f"catalog_raw_{uid}", f"catalog_out_{uid}",
                                f"catalog_ingested_{uid}")
    topic = f"catalog_topic_{uid}"
    spark.sql(f"create database if not exists {SCHEMA}")
    spark.sql(f"create table {SCHEMA}.{mine} using delta as select id from range(3)")
    topics.produce(target, topic, [{"key": {"id": i}, "value": {"id": i, "name": f"n{i}"}} for i in range(50)])
    append_raw(spark, raw, [raw_row("catalogIn", n, n, "c", name=f"n{n}") for n in range(5)])
    project = make_scratch_project(tmp_path / "project", {"t.yml": transform(raw, "catalogIn", out)}, spark=spark)

    other = subprocess.Popen(
        [str(BIN / "python"), "-m", "tests.catalog.other_process", "--read", f"{SCHEMA}.{mine}",
         "--topic", topic, "--table", ingested, "--await-table", f"{SCHEMA}.{out}", "--await-out-rows", "5"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = Lines(other)
        lines.wait_for("ready", other)
        dbt_started = time.time()
        project.run(out)  # in this process, while the other one ingests
        dbt_ended = time.time()
        assert other.wait(300) == 0, other.stderr.read()[-3000:]
    finally:
        if other.poll() is None:
            other.kill()
    seen = json.loads(lines.text().splitlines()[-1])
    assert seen["session_table_ids"] == [0, 1, 2]
    assert seen["from_kafka_rc"] == 0
    assert seen["dbt_table_out_rows"] == 5
    ingest_started, ingest_ended = seen["ingest"]
    assert ingest_started < dbt_ended and dbt_started < ingest_ended, "ingest and dbt run did not overlap"
    # The other process's raw table, seen here.
    ids = sorted(r[0] for r in spark.sql(f"select key.id from {SCHEMA}.{ingested}").collect())
    assert ids == list(range(50))
    drop_tables(spark, mine, raw, out, f"{out}__pending", ingested)
