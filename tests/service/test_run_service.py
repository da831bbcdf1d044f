"""`zync run` as a service, in a process of its own, on the real broker, registry, catalog and Spark.

One run of the invoices demo through a continuously running `zync run`:
- each batch's output is exactly zync's NewInvoices stream;
- a hand-run `dbt run` of the same model, from another process (this one),
  while `zync run` runs: no record is duplicated or lost, whichever wins;
- kill -9 at a seeded random moment of batch 3's cycle, then a restart: the
  exact stream again;
- SIGTERM mid-way through batch 4: the step under way finishes, the process
  exits 0, and what it published is a prefix of the stream;
- compaction all along (`--compact-after 2`: every table's small files are
  compacted every second commit, so compactions meet the hand-run `dbt run`,
  the kills and the SIGTERM), changing no row;
- all of it with the dbt stage in the cycle and beside it (`--dbt beside`: ingest and
  egress go on while the model runs on a thread of its own);
- more kill -9 trials with ZYNC_RUN_KILL_TRIALS=N (default 1, the one above:
  the suite's time; `make chaos-run` runs 10): a restart, then each trial while a round of new
  invoices, their statuses and updates flows, followed at once by a restart:
  in the end the topic holds every expected record once, in per-key order,
  at contiguous offsets from 0.
"""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict

import pytest

from testkit.harness import RunProcess, by_key, invoice_round, wait_until
from testkit.invoices import ROOT, SCHEMA, InvoicesProject, invoices_project

KILL_TRIALS = int(os.environ.get("ZYNC_RUN_KILL_TRIALS", "1"))
SEED = int(os.environ.get("ZYNC_RUN_KILL_SEED", "14"))
COMPACTING = ("--compact-after", "2")


def hand_run_dbt(project: InvoicesProject):
    """An analyst's `dbt run --select <the output model>` in this process (its own SparkSession's engine)."""
    from dbt.cli.main import dbtRunner

    return dbtRunner().invoke(["run", "--select", project.name("new_invoices"), "--project-dir", str(project.path),
                               "--profiles-dir", str(ROOT / "profiles")])


@pytest.fixture
def project(tmp_path, dbt) -> InvoicesProject:
    # Topics and tables of their own for each place of the dbt stage.
    return invoices_project(tmp_path, "Live" if dbt == "in-cycle" else "Beside")


@pytest.mark.parametrize("dbt", ["in-cycle", "beside"])
def test_zync_run_keeps_the_stream_exact_through_a_hand_run_dbt_sigterm_and_kill_9(target, spark, project, tmp_path,
                                                                                  dbt):
    log = tmp_path / "zync-run.log"
    options = (*COMPACTING, "--dbt", dbt)
    run = RunProcess(project, log, options=options)
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
        run = RunProcess(project, log, options=options)
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
            run = RunProcess(project, log, options=options)
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
                run = RunProcess(project, log, options=options)
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
    assert '"stage": "compact"' in log.read_text(), "no compaction ran"
    if KILL_TRIALS > 1:
        assert records[: len(project.expected(4))] == project.expected(4)
        assert by_key(records[len(project.expected(4)):]) == dict(expected), "lost, duplicated or out of key order"
