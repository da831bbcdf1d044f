"""What a long-running verb shows: a live line on a terminal, JSON log lines otherwise, one summary at the end;
and the rule that says when `--exit-after` may start counting idle time.

`Progress` is the one class every verb reports through, so they all look alike: the verbs that move
records (`from-kafka`, `to-kafka`, `zync run`'s quiet stages) count records, commits and lag;
`zync run` itself (`Progress.for_run`) counts cycles and the stages that did work in them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TextIO

LIVE_INTERVAL_S = 0.5
# An idle `zync run` logs one line this often, so a log that stops means a service that stopped.
HEARTBEAT_S = 60.0
STAGES = ("ingest", "dbt", "egress", "compact")


@dataclass
class StageReport:
    """One stage of one `zync run` cycle."""

    stage: str  # one of STAGES
    seconds: float
    records: int = 0  # records moved; for compact, files removed
    detail: dict = field(default_factory=dict)


class Progress:
    """A verb's output: one live line redrawn on a terminal, one JSON line per event elsewhere.

    `verb` names the verb in JSON lines, `label` (default: the verb) prefixes the printed lines.
    `quiet`: nothing at all (zync run reports its stages itself). `live` (default: the stream is a
    terminal) redraws one line, at most every `interval_s` while records move.
    """

    def __init__(self, verb: str, stream: TextIO = sys.stderr, live: bool | None = None, quiet: bool = False,
                 interval_s: float = LIVE_INTERVAL_S, label: str | None = None):
        self.verb = verb
        self.label = label or verb
        self.stream = stream
        self.quiet = quiet
        self.live = (stream.isatty() if live is None else live) and not quiet
        self.interval_s = interval_s
        self.started = time.monotonic()
        self.records = 0  # read (ingest) or published (egress)
        self.committed = 0  # committed to tables (ingest)
        self.commits = 0
        self.lag: dict[tuple[str, int], int] = {}
        self._drawn_at = 0.0
        self.cycles = 0
        self.busy_cycles = 0
        self.totals = dict.fromkeys(STAGES, 0)
        self.errors = 0
        self._last_stages: dict[str, StageReport] = {}
        self._last_cycle_s = 0.0
        self._idle_since = time.monotonic()
        self._heartbeat_at = time.monotonic()

    @classmethod
    def for_run(cls, stream: TextIO = sys.stderr, live: bool | None = None) -> Progress:
        """`zync run`'s: `run` in its JSON lines, `zync run` before its printed ones."""
        return cls("run", stream, live, label="zync run")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def rate(self) -> float:
        """Records per second: committed ones where this verb commits, else the ones it moved."""
        done = self.committed if self.commits else self.records
        return done / self.elapsed if self.elapsed > 0 else 0.0

    # --- the stream ------------------------------------------------------------

    def _json(self, **fields) -> None:
        self.stream.write(json.dumps({"ts": round(time.time(), 3), "verb": self.verb, **fields}, default=str) + "\n")
        self.stream.flush()

    def _redraw(self, text: str) -> None:
        self.stream.write(f"\r{self.label}: {text}\033[K")
        self.stream.flush()

    def _above(self, text: str) -> None:
        """A line printed above the live one (which the caller redraws)."""
        self.stream.write(f"\r\033[K{self.label}: {text}\n")

    def _summary(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\033[K")
        self.stream.write(f"{self.label}: {text}\n")
        self.stream.flush()

    def log(self, event: str, **fields) -> None:
        """One JSON line to the stream (only when not drawing the live line)."""
        if not self.live and not self.quiet:
            self._json(event=event, **fields)

    def note(self, message: str, **fields) -> None:
        """A line for the operator: above the live line, or a JSON `note` event."""
        if self.live:
            self._above(message)
            self._draw_cycles()
        elif not self.quiet:
            self._json(event="note", message=message, **fields)

    # --- ingest: read, then committed ----------------------------------------

    def read(self, records: int) -> None:
        self.records += records
        self._draw(f"{self.committed:,} records committed ({self.records:,} read), {self.rate():,.0f}/s, "
                   f"lag {self._lag_text()}")

    def commit(self, table: str, records: int, offsets: Mapping[int, int], **extra) -> None:
        self.committed += records
        self.commits += 1
        self.log("commit", table=table, records=records, next_offsets=dict(offsets), **extra)
        self.read(0)

    def _lag_text(self) -> str:
        return " ".join(f"{t}[{p}]:{n:,}" for (t, p), n in sorted(self.lag.items())) or "-"

    # --- egress: a running count ---------------------------------------------

    def update(self, records: int, detail: str = "") -> None:
        self.records = records
        self._draw(f"{records:,} records, {self.rate():,.0f}/s {detail}")

    def _draw(self, text: str) -> None:
        now = time.monotonic()
        if not self.live or now - self._drawn_at < self.interval_s:
            return
        self._drawn_at = now
        self._redraw(text)

    def finish(self, summary: str, with_rate: bool = False) -> None:
        """The one summary line: what was done, in how long (and at what rate)."""
        if self.quiet:
            return
        rate = f" ({self.rate():,.0f} records/s)" if with_rate else ""
        self._summary(f"{summary} in {self.elapsed:.1f}s{rate}")

    # --- zync run: cycles of stages ------------------------------------------

    def _draw_cycles(self) -> None:
        """The live line of a service: per stage its last figures, the last busy cycle, idle time.

        Drawn on every call: a cycle's end and the waits between cycles come seconds apart.
        """
        parts = [f"cycle {self.cycles}"]
        for name in STAGES:
            report = self._last_stages.get(name)
            if report is not None:
                unit = {"dbt": "models", "compact": "files"}.get(name, "records")
                lag = report.detail.get("lag")
                parts.append(f"{name} {report.records:,} {unit} {report.seconds:.1f}s"
                             + (f" lag {lag:,}" if lag is not None else ""))
        if self._last_stages:
            parts.append(f"last busy cycle {self._last_cycle_s:.1f}s")
        idle = time.monotonic() - self._idle_since
        parts.append(f"idle {idle:.0f}s" if idle >= 1 else "working")
        self._redraw(" | ".join(parts))

    def cycle(self, stages: list[StageReport], seconds: float) -> None:
        """One cycle ended; `stages` are those that did work (none: an idle cycle).

        Logged: one line per stage and one for the cycle when it did work; an idle service one
        heartbeat every HEARTBEAT_S.
        """
        self.cycles += 1
        now = time.monotonic()
        if stages:
            self.busy_cycles += 1
            self._last_cycle_s = seconds
            self._idle_since = now
            for report in stages:
                self._last_stages[report.stage] = report
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
            self._draw_cycles()

    def tick(self) -> None:
        """Redraw the live line while waiting (its idle time moves)."""
        if self.live:
            self._draw_cycles()

    def error(self, stage: str, what: str, message: str) -> None:
        """A stage failed for one topic or model; the service goes on (and retries it later)."""
        self.errors += 1
        if self.live:
            self._above(f"{stage} {what}: error: {message}")
            self._draw_cycles()
        else:
            self._json(cycle=self.cycles + 1, stage=stage, of=what, error=message)

    def finish_cycles(self, why: str) -> None:
        """A service's summary line: its cycles, and what their stages moved."""
        self._summary(
            f"{why}: {self.cycles} cycles ({self.busy_cycles} with work) in {self.elapsed:.1f}s; "
            f"{self.totals['ingest']:,} records ingested, {self.totals['dbt']:,} model runs, "
            f"{self.totals['egress']:,} records published, {self.totals['compact']:,} small files compacted, "
            f"{self.errors} errors")


class CaughtUp:
    """The rule of `--exit-after DUR`: stop after DUR with nothing new, but count idle time only once
    what the partitions held when the run started is read (a slow first fetch is not idleness).

    `marks`: the high-water mark at the start of each partition that had messages left to read.
    """

    def __init__(self, marks: Mapping[tuple[str, int], int]):
        self.behind = {tp: high for tp, high in marks.items()}
        self.last_activity = time.monotonic()

    def read_to(self, topic: str, partition: int, next_offset: int) -> None:
        """Everything before `next_offset` of the partition is read."""
        mark = self.behind.get((topic, partition))
        if mark is not None and next_offset >= mark:
            del self.behind[(topic, partition)]

    def active(self) -> None:
        """Something was read or written: idle time starts again."""
        self.last_activity = time.monotonic()

    @property
    def caught_up(self) -> bool:
        return not self.behind

    def done(self, exit_after: float | None) -> bool:
        """Whether a run with `--exit-after exit_after` (None: never) ends now."""
        return (exit_after is not None and not self.behind
                and time.monotonic() - self.last_activity >= exit_after)
