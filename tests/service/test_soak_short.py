"""bench/soak.py, short and seeded, on the suite's services: the report has its shape and sane values.

The hour-long run is a benchmark (docs/benchmarks.md); this one produces for 24 s at 20 events/s in
two windows of 12 s, which shows that every figure is measured (latency to the output topic and to
the mirrors, memory, heap after GC, files, disk, cycles) and that nothing is lost or duplicated.
Timings are not asserted: the machine's load decides them.
"""

from __future__ import annotations

from bench.soak import Soak, soak


def test_a_short_soak_reports_every_figure(target, tmp_path):
    report = soak(target, Soak(tmp_path, seconds=24, rate=20, window_s=12, tables=2, rows=20, sample_s=3,
                               drain_s=300, metrics_port=29472))
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
    assert sum(w["cycles"] for w in report["windows"]) >= 2
    # 8 tables: the invoices' two raw tables, output and mirror base; the database's raw tables and bases.
    assert len(report["samples"][-1]["disk_files"]) == 8 and len(report["samples"][-1]["live_files"]) == 8
    assert report["samples"][-1]["disk_bytes"] > report["samples"][0]["disk_bytes"]
    assert set(report["targets"]) == {"last_p50_within_1.2x_first", "python_rss_flat", "jvm_rss_flat",
                                      "files_per_table_flat", "disk_grows_with_data"}
    assert all(v in (True, False, None) for v in report["targets"].values())
