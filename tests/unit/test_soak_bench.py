"""bench/soak.py's figures: visibility by bisection, trends, windows and the targets."""

from __future__ import annotations

from bench import wide
from bench.soak import Sample, flat, percentiles, trend, verdicts, visibility, windows


def test_visibility_is_wides_first_commit_reaching_the_offset():
    commits = [wide.Commit(3, 30.0, {0: 9}), wide.Commit(1, 10.0, {0: 4}), wide.Commit(2, 20.0, {}),
               wide.Commit(4, 40.0, {0: 7})]
    at = visibility(commits)
    for offset in range(12):
        assert at(offset) == wide.visible_at(commits, 0, offset)
    assert at(5) == 30.0 and at(10) is None


def test_trend_and_flatness():
    assert trend([(0, 1.0), (1, 2.0)]) is None
    assert trend([(0, 10.0), (5, 15.0), (10, 20.0)]) == 10.0
    rising = [(float(t), 100.0 + 2 * t) for t in range(20)]  # +18 over the last half's ~137 mean: 13 %
    steady = [(float(t), 100.0 + (t % 2)) for t in range(20)]
    assert flat(rising, 0.10) is False and flat(steady, 0.10) is True
    assert flat(rising, 0.20) is True
    assert flat([(float(t), 3.0 + t % 4) for t in range(20)], 0.2, at_least=5) is True  # a few files up and down


def _sample(at: float, python_mb: float = 300.0, files: int = 10, disk: int = 1 << 20) -> Sample:
    return Sample(at, python_mb, 1500.0, 200.0, {"a": files, "b": files - 2}, {"a": files + 1, "b": files}, disk, 3)


def test_windows_and_targets():
    start = 1000.0
    output = [(start + t, start + t + (2.0 if t < 60 else 2.2)) for t in range(0, 120, 2)] + [(start + 5, None)]
    mirror = [(start + t, start + t + 1.0) for t in range(0, 120, 3)]
    samples = [_sample(start + t, disk=(1 + t) << 16) for t in range(0, 121, 10)]
    cycles = [{"ts": start + t, "seconds": 8.0} for t in range(5, 120, 10)]
    events = [start + t / 2 for t in range(240)]
    found = windows(start, start + 120, 60, output, mirror, samples, cycles, events)
    assert [w["window"] for w in found] == [1, 2] and [w["events"] for w in found] == [120, 120]
    assert found[0]["output"] == {"p50_s": 2.0, "p99_s": 2.0, "n": 30}
    assert found[1]["output"]["p50_s"] == 2.2 and found[1]["mirror"]["n"] == 20
    assert found[0]["files_per_table_max"] == 10 and found[0]["disk_files_max"] == 11
    assert found[0]["cycles"] == 6 and found[0]["cycle_p50_s"] == 8.0
    report = {"windows": found, "samples": [{"at": s.at, "python_mb": s.python_mb, "jvm_mb": s.jvm_mb,
                                             "live_files": s.live_files} for s in samples]}
    assert verdicts(report) == {"last_p50_within_1.2x_first": True, "python_rss_flat": True, "jvm_rss_flat": True,
                                "files_per_table_flat": True, "disk_grows_with_data": True}
    assert percentiles([]) == {"p50_s": None, "p99_s": None, "n": 0}

    # Bytes on disk growing with the square of the events (each compaction rewriting all before it):
    # the bytes per event over the second half grow with it.
    quadratic = [_sample(start + t, disk=(1 + t) ** 2 << 10) for t in range(0, 241, 10)]
    found = windows(start, start + 240, 60, output, mirror, quadratic, cycles, events + [start + 120 + t / 2
                                                                                          for t in range(240)])
    assert verdicts({"windows": found, "samples": report["samples"]})["disk_grows_with_data"] is False
