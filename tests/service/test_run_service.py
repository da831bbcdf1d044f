"""`zync run` as a service, in a process of its own, on the real broker, registry, catalog and Spark.

One run of the invoices demo through a continuously running `zync run`:
- each batch's output is exactly zync's NewInvoices stream;
- a hand-run `dbt run` of the same model, from another process (this one),
  while `zync run` runs: no record is duplicated or lost, whichever wins;
- kill -9 at a seeded random moment of batch 3's cycle, then a restart: the
  exact stream again;
- SIGTERM mid-way through batch 4: the step under way finishes, the process
  exits 0, and what it published is a prefix of the stream;
- more kill -9 trials with ZYNC_RUN_KILL_TRIALS=N (default 1, the one above:
  the suite's time; `make chaos-run` runs 10): a restart, then each trial while a round of new
  invoices, their statuses and updates flows, followed at once by a restart:
  in the end the topic holds every expected record once, in per-key order,
  at contiguous offsets from 0.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests.service.conftest import ROOT, SCHEMA, InvoicesProject, invoices_project

BIN = ROOT / ".venv" / "bin"
KILL_TRIALS = int(os.environ.get("ZYNC_RUN_KILL_TRIALS", "1"))
SEED = int(os.environ.get("ZYNC_RUN_KILL_SEED", "14"))
WAIT_S = 300.0  # a cold JVM on a loaded 2-core machine takes most of a minute before its first cycle


class RunProcess:
    """One `zync run` process of a project, its log in a file."""

    def __init__(self, project: InvoicesProject, log: Path):
        self.log = log
        with log.open("a") as out:
            self.process = subprocess.Popen(
                [str(BIN / "zync"), "run", "--interval", "1s"], cwd=project.path, stdout=out, stderr=out,
                env={**os.environ, "ZYNC_PROJECT_DIR": str(project.path)})

    def cycles(self) -> int:
        """Cycles with work this process (and those before it in the log) reported."""
        return sum(1 for line in self.log.read_text().splitlines() if line.startswith("{")
                   and json.loads(line).get("stage") == "cycle")

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(30)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(WAIT_S)


def wait_until(check, what: str, process: RunProcess, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if process.process.poll() is not None:
            raise AssertionError(f"zync run exited ({process.process.returncode}) while waiting for {what}:\n"
                                 + process.log.read_text()[-3000:])
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout:.0f}s:\n" + process.log.read_text()[-3000:])
        time.sleep(0.5)


def invoice_round(round_no: int, size: int = 4) -> tuple[dict[str, list[dict]], dict[int, list[dict]]]:
    """One round of events (new invoices with their statuses; the previous round's paid) and the
    output each new invoice must get, in order: its denormalised row, then its paid status."""
    ids = [1000 + round_no * 10 + j for j in range(size)]
    previous = [1000 + (round_no - 1) * 10 + j for j in range(size)] if round_no > 0 else []
    invoices = [{"key": {"ID": i}, "value": {"before": None, "op": "c",
                                             "after": {"ID": i, "customer": f"c{i}", "item": f"item{i}"}}}
                for i in ids]
    statuses = [{"key": {"ID": 5000 + i}, "value": {"before": None, "op": "c",
                                                    "after": {"ID": 5000 + i, "InvoiceID": i, "status": "new"}}}
                for i in ids]
    statuses += [{"key": {"ID": 5000 + i}, "value": {"before": None, "op": "u",
                                                     "after": {"ID": 5000 + i, "InvoiceID": i, "status": "paid"}}}
                 for i in previous]
    expected = {i: [{"ID": i, "customer": f"c{i}", "item": f"item{i}", "invoice_status": "new"}] for i in ids}
    paid = {i: [{"ID": i, "invoice_status": "paid"}] for i in previous}
    return {"Invoices": invoices, "InvoiceStatus": statuses}, {**expected, **{i: v for i, v in paid.items()}}


def hand_run_dbt(project: InvoicesProject):
    """An analyst's `dbt run --select <the output model>` in this process (its own SparkSession's engine)."""
    from dbt.cli.main import dbtRunner

    return dbtRunner().invoke(["run", "--select", project.name("new_invoices"), "--project-dir", str(project.path),
                               "--profiles-dir", str(ROOT / "profiles")])


def by_key(records: list[dict]) -> dict[int, list[dict]]:
    found: dict[int, list[dict]] = defaultdict(list)
    for r in records:
        found[r["key"]["ID"]].append(r["value"])
    return dict(found)


@pytest.fixture
def project(tmp_path) -> InvoicesProject:
    return invoices_project(tmp_path, "Live")


def test_zync_run_keeps_the_stream_exact_through_a_hand_run_dbt_sigterm_and_kill_9(target, spark, project, tmp_path):
    log = tmp_path / "zync-run.log"
    run = RunProcess(project, log)
    try:
        # Batch 1: the service picks it up on its own.
        project.produce_batch(target, 1)
        wait_until(lambda: project.published_count(target) >= len(project.expected(1)), "batch 1 output", run)
        assert project.published(target) == project.expected(1)

        # Batch 2, and an analyst's `dbt run` of the same model as soon as its raw table moved.
        raw = f"{SCHEMA}.{project.name('raw_invoices')}"
        rows_before = spark.table(raw).count()
        project.produce_batch(target, 2)
        wait_until(lambda: spark.table(raw).count() > rows_before, "batch 2 in the raw table", run)
        hand = hand_run_dbt(project)
        if not hand.success:  # the MERGE guard stopped it: it must say so
            assert "another run of" in str(hand.result) or "Concurrent" in str(hand.result), hand.result
        wait_until(lambda: project.published_count(target) >= len(project.expected(2)), "batch 2 output", run)
        time.sleep(3)  # a duplicate would land now
        assert project.published(target) == project.expected(2)

        # Batch 3, and kill -9 at a random moment of its cycle; a restart right after.
        chance = random.Random(SEED)
        project.produce_batch(target, 3)
        time.sleep(chance.uniform(0.0, 12.0))
        run.kill()
        run = RunProcess(project, log)
        wait_until(lambda: project.published_count(target) >= len(project.expected(3)), "batch 3 output", run)
        time.sleep(3)  # a duplicate would land now
        assert project.published(target) == project.expected(3)

        # Batch 4, then SIGTERM while it is under way: the step finishes, exit 0, nothing half-published.
        project.produce_batch(target, 4)
        time.sleep(chance.uniform(0.5, 4.0))
        assert run.terminate() == 0
        assert "zync run: stopped" in log.read_text()
        so_far = project.published(target)
        assert so_far == project.expected(4)[: len(so_far)]

        # More kill -9 trials (ZYNC_RUN_KILL_TRIALS), each while a round of invoices, statuses and updates flows.
        expected: dict[int, list[dict]] = defaultdict(list)
        total = len(so_far)
        if KILL_TRIALS > 1:
            run = RunProcess(project, log)
            started_at = run.cycles()
            for trial in range(KILL_TRIALS - 1):
                # The round flows once the new process is warm, so the kill lands in a cycle's work.
                wait_until(lambda: run.cycles() > started_at, "the restarted run's first cycle", run)
                events, outputs = invoice_round(trial)
                for topic in ("Invoices", "InvoiceStatus"):
                    project.produce(target, topic, events[topic])
                for key, values in outputs.items():
                    expected[key] += values
                time.sleep(chance.uniform(0.0, 12.0))
                run.kill()
                run = RunProcess(project, log)
                started_at = run.cycles()
            total = len(project.expected(4)) + sum(len(v) for v in expected.values())
            wait_until(lambda: project.published_count(target) >= total, "every round's output", run)
            time.sleep(3)  # a duplicate would land now
            assert run.terminate() == 0
    finally:
        if run.process.poll() is None:
            run.kill()

    records = project.published(target)
    assert [r["kafka"]["offset"] for r in records] == list(range(total)), "offsets not contiguous"
    if KILL_TRIALS > 1:
        assert records[: len(project.expected(4))] == project.expected(4)
        assert by_key(records[len(project.expected(4)):]) == dict(expected), "lost, duplicated or out of key order"
