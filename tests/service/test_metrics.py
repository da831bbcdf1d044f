"""One `zync run` watched from outside: a real Prometheus scrapes it, its /healthz, VACUUM after compaction,
and then bench/soak.py's short soak on the same process.

The two tests share one `zync run` (a module fixture): each new `zync run` starts its own Spark JVM
and pays a cold first cycle, most of a minute on a loaded 2-core machine. Its project holds the
invoices demo twice (prefix Metr for the first test, Soak for the second) and the soak's database
entry, so neither test's figures count the other's records.

The first test: one Prometheus server (Debian's, `make prometheus`), on loopback
like the run, through two batches of the demo, the second produced while
the first is still on its way (so the topic's lag shows while a cycle runs):
- freshness: every input change is counted once per model that applies it
  (the output: when published; the mirror: when ingested), the newest's gauge
  is a plausible number of seconds, and each model's "behind" time rises while
  a batch is on its way and is back at 0 once drained;
- lag: the topic's messages past its raw table rise, then settle at 0;
- the same figures in the file `zync etl status` shows them from;
- runs, rows, records, files, compactions, vacuums and the engine's figures;
- /healthz: 200 while it cycles; 503 naming the hung cycle while the Spark
  JVM is stopped (SIGSTOP) past --stale-after, 200 again once it runs on;
- VACUUM: with --compact-after 2 and --vacuum-retention 1s the compacted raw
  table's folder holds only its current files, and the rows are unchanged.

The second, on the process the first left running (after its engine was stopped and resumed):
bench/soak.py producing for 24 s at 20 events/s in two windows of 12 s, which shows that every
figure is measured (latency to the output topic and to the mirrors, memory, heap after GC, files,
disk, cycles) and that nothing is lost or duplicated; then SIGTERM, and the process exits 0.
Timings are not asserted: the machine's load decides them, and so do the first test's options,
which the soak runs under too (compaction every second commit, VACUUM at 1 s). The hour-long soak
is a benchmark (docs/benchmarks.md), with zync run's defaults.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest

from bench import wide
from bench.soak import Soak, soak, soak_project
from service.etl_status import render_freshness
from service.freshness import freshness_file, read_freshness
from testkit.harness import engine_pid, wait_until
from testkit.invoices import DEMO, SCHEMA, InvoicesProject, invoices_transforms
from testkit.prometheus import Prometheus
from tests.conftest import TEST_STATE

METRICS_PORT, PROMETHEUS_PORT = 29471, 29190
STALE_AFTER_S = 6


@dataclass
class SharedRun:
    spec: Soak
    prepared: tuple  # soak_project's answer
    run: wide.ZyncRun
    project: InvoicesProject  # the first test's copy of the demo


@pytest.fixture(scope="module")
def shared_run(target, tmp_path_factory):
    folder = tmp_path_factory.mktemp("observed")
    spec = Soak(folder, seconds=24, rate=20, window_s=12, tables=2, rows=20, sample_s=3, drain_s=300,
                metrics_port=METRICS_PORT)
    metrics_transforms = {f"metr_{name}": text for name, text in invoices_transforms("Metr").items()}
    prepared = soak_project(target, spec, metrics_transforms)
    path = prepared[0].path
    run = wide.ZyncRun(path, folder / "zync-run.log",
                       options=("--metrics", f"127.0.0.1:{METRICS_PORT}", "--compact-after", "2",
                                "--vacuum-retention", "1s", "--stale-after", f"{STALE_AFTER_S}s"))
    yield SharedRun(spec, prepared, run, InvoicesProject(path, "Metr"))
    # The soak stops the run and checks its exit; without it (a test selected alone, or one that
    # failed early) the same check happens here.
    if run.process.poll() is None:
        assert run.stop()["exit_code"] == 0, run.log.read_text()[-3000:]


def _records(batches: range, topic: str) -> int:
    return sum(len((DEMO / f"batch-{b}" / f"{topic}.jsonl").read_text().splitlines()) for b in batches
               if (DEMO / f"batch-{b}" / f"{topic}.jsonl").exists())


def _healthz() -> tuple[int, dict]:
    try:
        answer = urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/healthz", timeout=5)
        return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_prometheus_scrapes_freshness_and_lag_health_and_vacuum(target, spark, shared_run):
    project, run = shared_run.project, shared_run.run
    prometheus = Prometheus(TEST_STATE / "prometheus", PROMETHEUS_PORT, [f"127.0.0.1:{METRICS_PORT}"])
    output, mirror = project.name("new_invoices"), project.name("invoices_mirror")
    invoices, statuses = project.name("Invoices"), project.name("InvoiceStatus")
    raw_invoices = f"{SCHEMA}.{project.name('raw_invoices')}"
    out, mir = f'model="{output}"', f'model="{mirror}"'
    try:
        wait_until(lambda: prometheus.value("zync_engine_alive") == 1, "a scrape of zync run", run)
        assert _healthz()[0] in (200, 503)  # served while the first cycle warms up

        # Batch 1, and batch 2 as soon as batch 1 is in its raw table: it waits in Kafka while batch 1's
        # dbt run goes on.
        project.produce_batch(target, 1)
        wait_until(lambda: spark.catalog.tableExists(raw_invoices) and spark.table(raw_invoices).count() > 0,
                   "batch 1 ingested", run)
        project.produce_batch(target, 2)
        wait_until(lambda: project.published_count(target) >= len(project.expected(2)), "batch 2 output", run)
        assert project.published(target) == project.expected(2)

        changes, mirrored = _records(range(1, 3), "Invoices") + _records(range(1, 3), "InvoiceStatus"), \
            _records(range(1, 3), "Invoices")
        wait_until(lambda: prometheus.value(f"zync_model_freshness_seconds_count{{{out}}}") == changes
                   and prometheus.value(f"zync_model_behind_seconds{{{out}}}") == 0
                   and prometheus.value(f'zync_topic_lag_messages{{topic="{invoices}"}}') == 0,
                   "freshness of every change, nothing behind, no lag", run, timeout=60)
        # Each change is counted once: the mirror's are those of its one topic.
        assert prometheus.value(f"zync_model_freshness_seconds_count{{{mir}}}") == mirrored
        assert prometheus.value(f'zync_topic_records_ingested_total{{topic="{invoices}"}}') == mirrored
        assert prometheus.value(f'zync_topic_records_ingested_total{{topic="{statuses}"}}') == changes - mirrored
        assert prometheus.value(f'zync_topic_dead_letters_total{{topic="{invoices}"}}') in (None, 0)
        # They moved: behind and lag rose while the batches were on their way, and settled.
        assert prometheus.value(f"max_over_time(zync_model_behind_seconds{{{out}}}[10m])") > 0
        assert prometheus.value(f'max_over_time(zync_topic_lag_messages{{topic="{invoices}"}}[10m])') > 0
        newest = prometheus.value(f"zync_model_freshness_newest_seconds{{{out}}}")
        assert 0 < newest < 300
        assert 0 <= prometheus.value(f"zync_model_freshness_newest_seconds{{{mir}}}") < newest
        p50 = prometheus.value(f"histogram_quantile(0.5, zync_model_freshness_seconds_bucket{{{out}}})")
        assert 0 < p50 < 300
        # What `zync etl status` shows of it (service/etl_status.py render_freshness).
        freshness = freshness_file(project.path, "local")
        wait_until(lambda: (read_freshness(freshness) or {}).get("models", {}).get(output, {}).get("behind_seconds")
                   == 0, "the freshness file", run, timeout=30)
        assert read_freshness(freshness)["models"][output]["newest_seconds"] > 0
        assert "newest change" in render_freshness(project.path, "local")
        # Runs, rows, what egress published, the tables, the cycles, the engine. The two batches may
        # meet in one run (a cycle that ingested batch 1's invoices before its statuses' topic had any
        # leaves the output's first run to the next cycle, with batch 2 arrived): at least one run.
        runs = prometheus.value(f"zync_model_runs_total{{{out}}}")
        assert runs >= 1
        assert prometheus.value(f"zync_model_failures_total{{{out}}}") in (None, 0)
        assert prometheus.value(f"zync_model_run_seconds_count{{{out}}}") >= 1
        assert prometheus.value(f"zync_model_rows_written_total{{{out}}}") > len(project.expected(2))
        assert prometheus.value(f"zync_model_records_published_total{{{out}}}") == len(project.expected(2))
        assert prometheus.value(f"zync_model_rows_pending{{{out}}}") == 0
        assert prometheus.value(f'zync_table_files{{table="{raw_invoices}"}}') >= 1
        assert prometheus.value(f'zync_table_bytes{{table="{raw_invoices}"}}') > 0
        assert prometheus.value('zync_cycles_total{work="true"}') >= 2
        assert prometheus.value('zync_stage_seconds_count{stage="dbt"}') >= 2
        assert prometheus.value("zync_engine_heap_used_bytes") > 0
        assert prometheus.value("zync_engine_heap_after_gc_bytes") > 0
        assert prometheus.value("zync_engine_process_resident_memory_bytes") > 100e6
        assert prometheus.value("zync_process_resident_memory_bytes") > 10e6

        # Compaction then VACUUM: the raw table's folder holds exactly its current version's files.
        rows = sorted(map(str, spark.table(raw_invoices).collect()))
        wait_until(lambda: (prometheus.value(f'zync_table_vacuums_total{{table="{raw_invoices}"}}') or 0) >= 1,
                   "a vacuum of the compacted raw table", run, timeout=60)
        assert prometheus.value(f'zync_table_compactions_total{{table="{raw_invoices}"}}') >= 1
        assert prometheus.value(f'zync_table_files_vacuumed_total{{table="{raw_invoices}"}}') >= 1
        folder = Path(urlparse(spark.sql(f"describe detail {raw_invoices}").first()["location"]).path)
        on_disk = len(list(folder.glob("*.parquet")))
        assert on_disk == spark.sql(f"describe detail {raw_invoices}").first()["numFiles"]
        assert sorted(map(str, spark.table(raw_invoices).collect())) == rows

        # Health: 200 while it cycles; 503 naming the cycle while the engine hangs; 200 once it runs on.
        status, body = _healthz()
        assert status == 200 and body["checks"] == {"engine": "ok", "catalog": "ok", "broker": "ok", "cycle": "ok"}
        jvm = engine_pid(run.process.pid)
        os.kill(jvm, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + STALE_AFTER_S + 30
            while (status := _healthz())[0] == 200 and time.monotonic() < deadline:
                time.sleep(0.5)
            assert status[0] == 503 and "a stage hangs" in status[1]["checks"]["cycle"], status
        finally:
            os.kill(jvm, signal.SIGCONT)
        wait_until(lambda: _healthz()[0] == 200, "healthy again", run, timeout=60)
    finally:
        prometheus.stop()


def test_a_short_soak_reports_every_figure(target, shared_run):
    report = soak(target, shared_run.spec, shared_run.prepared, shared_run.run)
    assert report["outputs_missing"] == report["mirror_missing"] == report["duplicates"] == report["errors"] == 0
    assert report["memory_peak"]["exit_code"] == 0
    assert 0 < report["first_output_after_produce_s"] < report["first_output_after_start_s"]
    assert [w["window"] for w in report["windows"]] == [1, 2]
    for w in report["windows"]:
        assert 180 <= w["events"] <= 300  # 20 events/s for 12 s, the two producers' rounding aside
        for what in ("output", "mirror"):
            assert w[what]["n"] > 0 and 0 <= w[what]["p50_s"] <= w[what]["p99_s"] < 300
        assert w["python_rss_mb"] > 20 and w["jvm_rss_mb"] > 200 and 0 < w["heap_after_gc_mb"] < w["jvm_rss_mb"]
        assert w["files_per_table_max"] >= 1 and w["disk_files_max"] >= w["files_per_table_max"]
        assert w["disk_mb"] > 0
        assert (w["cycles"] == 0) == (w["cycle_p50_s"] is None)
    # How many cycles end inside a 24 s window is the machine's to decide (one cycle took most of it on a
    # loaded host); that they are counted is not. The cycle that drained the last event started after the
    # first sample, so the busy-cycle counter the samples scrape has risen by then.
    busy = [s["busy_cycles"] for s in report["samples"]]
    assert None not in busy and busy[-1] > busy[0]
    # 8 tables watched: the invoices' two raw tables, output and mirror base; the database's raw tables and
    # bases. A mirror's base is there once its first fold made it (a small first build makes its view alone).
    last = report["samples"][-1]
    assert len(last["disk_files"]) == 8 and 5 <= len(last["live_files"]) <= 8
    assert set(last["live_files"]) <= set(last["disk_files"])
    assert report["samples"][-1]["disk_bytes"] > report["samples"][0]["disk_bytes"]
    assert set(report["targets"]) == {"last_p50_within_1.2x_first", "python_rss_flat", "jvm_rss_flat",
                                      "files_per_table_flat", "disk_grows_with_data"}
    assert all(v in (True, False, None) for v in report["targets"].values())
