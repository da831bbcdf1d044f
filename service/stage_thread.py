"""A stage of `zync run` (ingest or egress) run over and over on its own thread, beside the cycle.

A cycle's dbt stage is most of its time (~5-10 s for a few thousand events);
run in line, ingest (~1-2 s) and egress (~1-2 s) add to it, and an event that
arrives while the model runs waits for all three before its cycle even
starts. On their own threads they follow the topics and the output tables
while the model runs: the loop's cycle is the dbt stage, the next run starts
on what has landed meanwhile, and a written output is published as soon as it
is committed.

Each stage keeps the guarantee it has alone (ingest resumes from its tables'
offsets, egress from the topic's high-water mark, both read from Delta
snapshots); what the loop decides from table versions is only whether to run,
and a version read before a concurrent commit just makes the next cycle run
again. Each thread drives its own Spark session (Spark's newSession: the same
engine and catalog, its own settings), so the dbt stage's scoped settings
(interpreted plans, adaptive execution off) never reach an ingest's write, and
an ingest's Parquet settings never reach the model's; the thread first makes
it its active session in the JVM (zync.spark.activate), where Spark reads
some settings from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager

from service.status import StageReport, merged


class StageThread(threading.Thread):
    """Calls `step` (one pass of a stage; its report, or None when it had nothing to do) until stopped.

    After a pass with nothing to do it waits `idle_s`, or less if woken
    (`wake`: the loop says there is work, such as an output a run just wrote).
    """

    def __init__(self, name: str, step: Callable[[], StageReport | None], idle_s: float,
                 stopping: threading.Event, moved: threading.Event, on_start: Callable[[], None] = lambda: None):
        super().__init__(name=f"zync-run-{name}", daemon=True)
        self.step = step
        self.on_start = on_start  # first thing the thread does (its Spark session made active there)
        self.idle_s = idle_s
        self.stopping = stopping
        self.moved = moved  # set after every pass that did work: the loop looks at what moved
        self.wake = threading.Event()
        self.error: BaseException | None = None  # what ended the thread (the loop raises it)
        self._pass = threading.Lock()  # held by a pass
        self._held = threading.Event()  # set while the loop keeps the stage still: no pass starts
        self._reports: list[StageReport] = []
        self._reports_lock = threading.Lock()

    @contextmanager
    def still(self):
        """No pass runs in the block (the one under way ends first)."""
        self._held.set()
        try:
            with self._pass:
                yield
        finally:
            self._held.clear()

    def run(self) -> None:
        try:
            self.on_start()
            while not self.stopping.is_set():
                if self._held.is_set():
                    self.stopping.wait(0.05)
                    continue
                with self._pass:
                    report = self.step()
                if report is None:
                    self.wake.wait(self.idle_s)
                    self.wake.clear()
                    continue
                with self._reports_lock:
                    self._reports.append(report)
                self.moved.set()
        except BaseException as e:  # noqa: BLE001 - a dead engine or a bug: the loop ends with it
            self.error = e
            self.moved.set()

    def take(self) -> StageReport | None:
        """What the passes since the last take did, as one report (None: nothing)."""
        with self._reports_lock:
            reports, self._reports = self._reports, []
        return merged(reports)
