"""What `zync run` tells its user: a live status line on a terminal, JSON log lines otherwise.

On a terminal one line is redrawn (per stage: records, lag, seconds of the
last cycle that did work) and errors print above it. Elsewhere (systemd,
a scheduler, a pipe) each cycle that did work logs one JSON line per stage
and one for the cycle; an idle service logs a heartbeat once a minute.
The lines are drawn and logged as every verb's are (zync/progress.py, Reporter).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from zync.progress import Reporter

HEARTBEAT_S = 60.0


@dataclass
class StageReport:
    """One stage of one cycle."""

    stage: str  # ingest, dbt, egress, compact
    seconds: float
    records: int = 0  # records moved; for compact, files removed
    detail: dict = field(default_factory=dict)


class RunStatus(Reporter):
    def __init__(self, stream: TextIO = sys.stderr, live: bool | None = None):
        super().__init__("run", stream, live, label="zync run")
        self.cycles = 0
        self.busy_cycles = 0
        self.totals = {"ingest": 0, "dbt": 0, "egress": 0, "compact": 0}
        self.errors = 0
        self._last: dict[str, StageReport] = {}
        self._last_cycle_s = 0.0
        self._idle_since = time.monotonic()
        self._heartbeat_at = time.monotonic()

    def _draw(self) -> None:
        parts = [f"cycle {self.cycles}"]
        for name in ("ingest", "dbt", "egress", "compact"):
            report = self._last.get(name)
            if report is not None:
                unit = {"dbt": "models", "compact": "files"}.get(name, "records")
                lag = report.detail.get("lag")
                parts.append(f"{name} {report.records:,} {unit} {report.seconds:.1f}s"
                             + (f" lag {lag:,}" if lag is not None else ""))
        if self._last:
            parts.append(f"last busy cycle {self._last_cycle_s:.1f}s")
        idle = time.monotonic() - self._idle_since
        parts.append(f"idle {idle:.0f}s" if idle >= 1 else "working")
        self._redraw(" | ".join(parts))

    def cycle(self, stages: list[StageReport], seconds: float) -> None:
        """One cycle ended; `stages` are those that did work (none: an idle cycle)."""
        self.cycles += 1
        now = time.monotonic()
        if stages:
            self.busy_cycles += 1
            self._last_cycle_s = seconds
            self._idle_since = now
            for report in stages:
                self._last[report.stage] = report
                self.totals[report.stage] += report.records
                if not self.live:
                    self._json(cycle=self.cycles, stage=report.stage, records=report.records,
                               seconds=round(report.seconds, 3), **report.detail)
            if not self.live:
                self._json(cycle=self.cycles, stage="cycle", seconds=round(seconds, 3))
        elif not self.live and now - self._heartbeat_at >= HEARTBEAT_S:
            self._json(cycle=self.cycles, stage="idle", idle_seconds=round(now - self._idle_since, 1))
            self._heartbeat_at = now
        if stages:
            self._heartbeat_at = now
        if self.live:
            self._draw()

    def tick(self) -> None:
        """Redraw the live line while waiting (its idle time moves)."""
        if self.live:
            self._draw()

    def error(self, stage: str, what: str, message: str) -> None:
        """A stage failed for one topic or model; the service goes on (and retries it later)."""
        self.errors += 1
        if self.live:
            self._above(f"{stage} {what}: error: {message}")
            self._draw()
        else:
            self._json(cycle=self.cycles + 1, stage=stage, of=what, error=message)

    def note(self, message: str, **fields) -> None:
        if self.live:
            self._above(message)
            self._draw()
        else:
            self._json(event="note", message=message, **fields)

    def finish(self, why: str) -> None:
        self._summary(
            f"{why}: {self.cycles} cycles ({self.busy_cycles} with work) in {self.elapsed:.1f}s; "
            f"{self.totals['ingest']:,} records ingested, {self.totals['dbt']:,} model runs, "
            f"{self.totals['egress']:,} records published, {self.totals['compact']:,} small files compacted, "
            f"{self.errors} errors")
