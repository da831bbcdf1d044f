"""The pure parts of operating `zync run`: freshness bookkeeping, health, the HTTP endpoints, vacuum timing, sd_notify."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from service.etl_status import render_freshness
from service.freshness import (IngestedFile, ModelFreshness, Observed, TopicWaits, freshness_file, read_commit,
                               source_times, spread, write_freshness)
from service.health import Health, tcp_check
from service.http_server import DEFAULT_PORT, parse_address, serve
from service.metrics import SpreadHistogram
from service.vacuum import VacuumSchedule
from service.watchdog import Watchdog, notify
from zync.errors import ZyncError


def _add(stats: dict, data_change: bool = True) -> str:
    return json.dumps({"add": {"path": "f.parquet", "dataChange": data_change, "modificationTime": 5,
                               "stats": json.dumps(stats)}})


def test_a_commit_gives_its_files_source_times_and_rows_written():
    debezium = {"numRecords": 3, "minValues": {"value": {"source": {"ts_ms": 1000}}, "kafka": {"timestamp": "x"}},
                "maxValues": {"value": {"source": {"ts_ms": 4000}}}}
    kafka_only = {"numRecords": 2, "minValues": {"kafka": {"timestamp": "2026-01-01T00:00:00.000Z"}},
                  "maxValues": {"kafka": {"timestamp": "2026-01-01T00:00:01.500Z"}}}
    commit = read_commit([
        '{"commitInfo":{"timestamp":9000,"operation":"WRITE","operationMetrics":{"numFiles":"2","numOutputRows":"5"}}}',
        _add(debezium), _add(kafka_only), _add(debezium, data_change=False)])
    assert commit.committed_ms == 9000 and commit.rows_written == 5
    assert commit.files == (IngestedFile(3, 1000, 4000, 9000), IngestedFile(2, 1767225600000, 1767225601500, 9000))
    merge = read_commit(['{"commitInfo":{"timestamp":1,"operationMetrics":{"numTargetRowsInserted":"2",'
                         '"numTargetRowsUpdated":"3","numTargetRowsDeleted":"1","numSourceRows":"9"}}}'])
    assert merge.rows_written == 6
    assert source_times({"minValues": {}, "maxValues": {}}) is None


def test_spread_puts_evenly_spaced_changes_in_their_buckets():
    assert spread(Observed(1.0, 5.0, 5), (0.5, 1, 2.5, 5, 10)) == [0, 1, 2, 5, 5]  # 1, 2, 3, 4, 5
    assert spread(Observed(3.0, 3.0, 4), (2, 3)) == [0, 4]
    histogram = SpreadHistogram("zync_x_seconds", "x", ("model",), (1.0, 10.0))
    histogram.observe(("m",), Observed(0.0, 20.0, 3))  # 0, 10, 20
    family = next(iter(histogram.collect()))
    samples = {(s.name, s.labels.get("le")): s.value for s in family.samples}
    assert samples[("zync_x_seconds_bucket", "1.0")] == 1
    assert samples[("zync_x_seconds_bucket", "10.0")] == 2
    assert samples[("zync_x_seconds_bucket", "+Inf")] == 3
    assert samples[("zync_x_seconds_count", None)] == 3 and samples[("zync_x_seconds_sum", None)] == 30.0


def test_an_output_applies_what_a_later_run_took_once_published_and_a_mirror_at_its_commit():
    files = [IngestedFile(2, 100_000, 101_000, 103_000)]
    mirror = ModelFreshness("mirror")
    assert mirror.ingested(files, arrived_s=102.0) == [Observed(2.0, 3.0, 2)]
    assert mirror.newest_s == 2.0 and mirror.behind(200.0, None) == 0.0

    output = ModelFreshness("output")
    assert output.ingested(files, arrived_s=101.5) == []
    assert output.behind(110.0, None) == 8.5  # waiting since it arrived
    output.run_succeeded(started_s=102.0)  # began before the commit: did not take it
    assert output.published(111.0) == [] and output.behind(111.0, None) == 9.5
    output.run_succeeded(started_s=104.0)
    assert output.published(112.0) == [Observed(11.0, 12.0, 2)]
    assert output.newest_s == 11.0 and output.applied_at == 112.0
    assert output.behind(300.0, None) == 0.0  # idle: not stale
    assert output.behind(300.0, topic_waiting_since=290.0) == 10.0  # a message waits in its topic


def test_a_steady_streams_wait_starts_again_at_each_ingest_and_ends_when_nothing_waits():
    waits = TopicWaits()
    waits.looked("t", 5, now_s=100.0)
    waits.looked("t", 9, now_s=105.0)  # still the first look's messages among them
    assert waits.since("t") == 100.0
    # The ingest read its marks at 110 and committed up to them; new messages arrived meanwhile.
    waits.ingested("t", marks_read_s=110.0)
    waits.looked("t", 3, now_s=120.0)
    assert waits.since("t") == 110.0 and waits.earliest(["t", "u"]) == 110.0
    waits.ingested("u", marks_read_s=130.0)  # nothing waited there: nothing starts
    assert waits.since("u") is None
    waits.looked("t", 0, now_s=140.0)
    assert waits.since("t") is None and waits.earliest(["t", "u"]) is None


def test_health_names_what_fails_and_the_cycle_bound():
    now = [1000.0]
    engine = [None]
    health = Health(lambda: engine[0], lambda: "ok", lambda: "ok", stale_after_s=60, clock=lambda: now[0])
    assert health.check().ok  # starting, within the bound
    now[0] += 61
    report = health.check()
    assert not report.ok and "no cycle has ended" in report.checks["cycle"]
    health.cycle_ended()
    assert health.check().ok
    engine[0] = "the Spark engine (JVM pid 7) was killed by signal 9"
    report = health.check().as_json()
    assert report["status"] == "unhealthy" and report["reason"].startswith("engine: the Spark engine (JVM pid 7)")
    with pytest.raises(ValueError):
        Health(lambda: None, lambda: "ok", lambda: "ok", stale_after_s=0)


def test_tcp_check_reaches_a_listening_port_and_names_a_closed_one():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert tcp_check(("127.0.0.1", port)) == "ok"
    assert tcp_check(("127.0.0.1", port)).startswith(f"cannot connect to 127.0.0.1:{port}")
    assert tcp_check(None) == "ok"


def test_the_server_answers_metrics_and_healthz_with_200_or_503():
    registry = CollectorRegistry()
    Counter("zync_example", "an example", registry=registry).inc(3)
    engine = [None]
    health = Health(lambda: engine[0], lambda: "ok", lambda: "ok")
    server = serve(("127.0.0.1", 0), registry, health)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        text = urllib.request.urlopen(f"{base}/metrics", timeout=5).read().decode()
        samples = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
        assert samples["zync_example_total"] == 3
        ok = urllib.request.urlopen(f"{base}/healthz", timeout=5)
        assert ok.status == 200 and json.loads(ok.read())["status"] == "ok"
        engine[0] = "the Spark engine (JVM pid 9) exited with status 1"
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(f"{base}/healthz", timeout=5)
        assert failed.value.code == 503
        assert "JVM pid 9" in json.loads(failed.value.read())["reason"]
    finally:
        server.shutdown()
        server.server_close()


def test_metrics_addresses():
    assert parse_address("off") is None
    assert parse_address("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_address("9100") == ("127.0.0.1", 9100)
    assert parse_address("localhost") == ("localhost", DEFAULT_PORT)
    assert parse_address(":9200") == ("127.0.0.1", 9200)
    with pytest.raises(ZyncError, match="HOST:PORT"):
        parse_address("host:http")


def test_a_table_is_vacuumed_a_retention_after_its_oldest_compaction_and_again_for_later_ones():
    schedule = VacuumSchedule(retention_s=100)
    schedule.compacted("t", 1000)
    schedule.compacted("t", 1050)
    assert schedule.due(1099) == [] and schedule.due(1100) == ["t"]
    schedule.vacuumed("t", 1100)  # the second compaction's files are 50 s old: kept, due later
    assert schedule.due(1149) == [] and schedule.due(1150) == ["t"]
    schedule.vacuumed("t", 1150)
    assert schedule.due(10_000) == [] and not schedule.known("t")
    with pytest.raises(ValueError):
        VacuumSchedule(-1)


def test_sd_notify_ready_after_a_healthy_cycle_then_watchdog_pings(tmp_path):
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as systemd:
        systemd.bind(path)
        systemd.settimeout(5)
        healthy = [False]
        health = Health(lambda: None if healthy[0] else "engine down", lambda: "ok", lambda: "ok")
        dog = Watchdog(health, {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
        dog.cycle_ended()  # unhealthy: not ready
        assert not dog.ready
        healthy[0] = True
        dog.cycle_ended()
        assert systemd.recv(100) == b"READY=1"
        assert systemd.recv(100) == b"WATCHDOG=1"  # every 0.1 s while healthy
        dog.stopping()
        while systemd.recv(100) != b"STOPPING=1":  # pings sent before it, if any
            pass
    assert not notify("READY=1", {})  # not under systemd


def test_etl_status_shows_each_models_freshness_from_the_runs_file(tmp_path):
    assert render_freshness(tmp_path, "local") == ""  # no zync run wrote one
    write_freshness(freshness_file(tmp_path, "local"), {
        "new_invoices": {"kind": "output", "newest_seconds": 8.25, "applied_at": 1000.0, "behind_seconds": 0.0},
        "invoices_mirror": {"kind": "mirror", "newest_seconds": None, "applied_at": None, "behind_seconds": 75.2}})
    lines = render_freshness(tmp_path, "local", now=1030.0).splitlines()
    assert lines[1].split() == ["model", "kind", "newest", "change", "applied", "behind"]
    assert lines[2].split() == ["new_invoices", "output", "8.2s", "30s", "ago", "0s"]
    assert lines[3].split() == ["invoices_mirror", "mirror", "-", "-", "1m", "15s"]


def test_a_cycle_compacts_a_few_tables_and_more_when_there_are_many():
    from service.compaction import compactions_per_cycle
    assert compactions_per_cycle(12, 50) == 2  # a dozen tables reaching 50 commits together: six cycles
    assert compactions_per_cycle(400, 50) == 16  # enough to keep up with a table's commit a cycle
    assert compactions_per_cycle(3, 1) == 6
