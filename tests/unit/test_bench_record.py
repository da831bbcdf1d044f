"""bench/record.py turns a benchmark's JSON into a figure of the benchmarks page, and bench/report.py
writes that figure as a table; both without a benchmark run."""
import json

from bench import record, report

LATENCY = {"rates": [100.0], "duration_s": 60.0, "warm_up_s": {},
           "rows": [{"design": d, "rate": 100.0, "duration_s": 60.0, "events": 6001, "outputs_expected": 4589,
                     "outputs_seen": 4589 - m, "missing": m, "duplicates": 0, "p50_s": p50, "p95_s": p50 * 2,
                     "p99_s": p50 * 3, "max_s": p50 * 4, "bounded": m == 0}
                    for d, p50, m in (("zync-run", 11.5, 0), ("chain", 120.0, 1068))],
           "zync_run_memory": {"exit_code": 0, "peak_python_mb": 275, "peak_jvm_mb": 2064}}


def side(p50, p99, first_build):
    return {"p50_s": p50, "p99_s": p99, "missing": 0, "bounded": True, "contents": {"equal": True}}


WIDE = {"command": "bench/wide.py --tables 50 --skew uniform", "date": "2026-12-02T06:29:00+00:00",
        "machine": {"cores": 2, "memory_gb": 23.4, "cpu": "AMD EPYC 7B13", "system": "Linux 6.1"},
        "whole_run_s": 290, "checks": [],
        "runs": [{"tables": 50, "skew": "uniform", "zync": side(2.36, 13.51, 35.1), "jdbc_sink": side(0.03, 2.08, 5.1),
                  "first_build_s": {"zync": 35.1, "jdbc_sink": 5.1}}]}


def test_a_latency_run_becomes_zync_and_its_anchor(tmp_path):
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(LATENCY))
    found = record.measured(path, None)
    assert found["command"] == ".venv/bin/python bench/latency.py --rates 100 --duration 60 --designs zync-run,chain"
    assert [r["role"] for r in found["rows"]] == ["zync", "anchor", "zync"]
    assert found["rows"][0]["value"].startswith("11.50 / 23.00 / 34.50 / 46.00 s; 4,589 of 4,589 outputs")
    assert "lag unbounded" in found["rows"][1]["value"]
    assert found["groups"]["series"][1]["values"] == [120.0, 240.0, 360.0]


def test_a_wide_run_becomes_mirrors_against_the_jdbc_sink(tmp_path):
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(WIDE))
    found = record.measured(path, None)
    assert found["date"] == "2026-12-02" and found["machine"] == "2 cores, 23 GiB RAM (AMD EPYC 7B13), Linux"
    assert found["groups"]["x"] == ["p50, N = 50", "p99, N = 50"]
    assert found["rows"][1] == {"role": "anchor", "label": "Debezium's JDBC sink, N = 50: p50 / p99 (first build)",
                                "value": "0.03 / 2.08 s (5.1 s); missing 0, lag bounded, rows equal"}


def test_an_entry_renders_as_one_table_with_its_plot():
    fig = {"id": "x", "question": "Q", "title": "T", "command": "c", "date": "2026-12-05", "conditions": "alone",
           "rows": [{"role": "zync", "label": "ours", "value": "1 s"}, {"role": "anchor", "label": "theirs", "value": "2 s"}],
           "target": "<= 1 s", "verdict": "met", "bars": []}
    lines = report.section(fig, "2 cores", "")
    assert lines[:4] == ["| | |", "| --- | --- |", "| ours | **1 s** |", "| anchor, same run: theirs | 2 s |"]
    assert "| machine | 2 cores; alone |" in lines and "![T](img/bench/x.svg)" in lines


def test_the_record_round_trips():
    text = record.dump({"figures": [{"id": "a", "rows": [{"role": "zync", "label": "x" * 200, "value": "1"}]}]})
    assert json.loads(text)["figures"][0]["rows"][0]["label"] == "x" * 200
