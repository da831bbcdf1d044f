"""`zync run`'s log when not on a terminal: JSON lines per busy cycle, one heartbeat per idle minute."""

from __future__ import annotations

import io
import json

from zync import progress
from zync.progress import HEARTBEAT_S, Progress, StageReport


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_idle_service_logs_one_heartbeat_a_minute_and_busy_cycles_log_each_stage(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    out = io.StringIO()
    run = Progress.for_run(stream=out, live=False)
    for _ in range(int(3 * HEARTBEAT_S)):  # three idle minutes, a cycle a second
        clock.now += 1.0
        run.cycle([], 0.02)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["stage"] for line in lines] == ["idle"] * 3
    assert [round(line["idle_seconds"]) for line in lines] == [60, 120, 180]

    out.truncate(0), out.seek(0)
    clock.now += 1.0
    run.cycle([StageReport("ingest", 1.5, 4), StageReport("dbt", 9.0, 1, {"models": ["m"]})], 10.5)
    busy = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(b["stage"], b.get("records")) for b in busy] == [("ingest", 4), ("dbt", 1), ("cycle", None)]
    assert busy[1]["models"] == ["m"] and busy[2]["seconds"] == 10.5

    out.truncate(0), out.seek(0)
    for _ in range(int(HEARTBEAT_S) - 1):  # the busy cycle restarted the idle clock
        clock.now += 1.0
        run.cycle([], 0.02)
    assert out.getvalue() == ""
