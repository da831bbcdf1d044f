"""`zync run`'s ingest and egress threads (service/stage_thread.py): their reports, holding them still,
their errors. Pure logic: the step is a function of this test."""

from __future__ import annotations

import threading
import time

from service.stage_thread import StageThread
from service.status import StageReport, merged


def started(step, idle_s: float = 0.01) -> tuple[StageThread, threading.Event, threading.Event]:
    stopping, moved = threading.Event(), threading.Event()
    thread = StageThread("test", step, idle_s, stopping, moved)
    thread.start()
    return thread, stopping, moved


def ended(thread: StageThread, stopping: threading.Event) -> None:
    stopping.set()
    thread.wake.set()
    thread.join(5)
    assert not thread.is_alive()


def test_reports_of_several_passes_are_taken_as_one():
    reports = [StageReport("ingest", 1.0, 4, {"tables": {"a": 3, "b": 1}, "lag": 7}),
               StageReport("ingest", 0.5, 2, {"tables": {"a": 2}, "lag": 0})]
    assert merged(reports) == StageReport("ingest", 1.5, 6, {"tables": {"a": 5, "b": 1}, "lag": 0})
    assert merged([]) is None

    queue = list(reports)
    thread, stopping, moved = started(lambda: queue.pop(0) if queue else None)
    try:
        assert moved.wait(5)
        deadline = time.monotonic() + 5
        while queue and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)  # the last pass's report appended
        assert thread.take() == merged(reports)
        assert thread.take() is None  # taken once
    finally:
        ended(thread, stopping)


def test_no_pass_runs_while_the_stage_is_held_still():
    passes, in_pass = [], threading.Event()

    def step():
        in_pass.set()
        time.sleep(0.05)
        passes.append(time.monotonic())
        in_pass.clear()
        return None

    thread, stopping, _ = started(step, idle_s=0.0)
    try:
        assert in_pass.wait(5)
        with thread.still():
            assert not in_pass.is_set()  # the pass under way ended before the block
            count = len(passes)
            time.sleep(0.3)
            assert len(passes) == count  # none started in it
        deadline = time.monotonic() + 5
        while len(passes) == count and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(passes) > count  # and they go on after it
    finally:
        ended(thread, stopping)


def test_an_error_ends_the_thread_and_is_kept_for_the_loop():
    def step():
        raise RuntimeError("the engine is gone")

    thread, stopping, moved = started(step)
    assert moved.wait(5)  # the loop is told
    thread.join(5)
    assert not thread.is_alive() and isinstance(thread.error, RuntimeError)
    stopping.set()


def test_a_woken_idle_stage_passes_at_once():
    passes = []
    thread, stopping, _ = started(lambda: passes.append(time.monotonic()), idle_s=60.0)
    try:
        deadline = time.monotonic() + 5
        while not passes and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(passes) == 1  # then idle for a minute
        thread.wake.set()
        deadline = time.monotonic() + 5
        while len(passes) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(passes) == 2
    finally:
        ended(thread, stopping)
