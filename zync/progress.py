"""What a long-running verb shows: a live line on a terminal, JSON log lines otherwise, one summary at the end;
and the rule that says when `--exit-after` may start counting idle time.

`Reporter` is what every verb shares, so they all look alike: `Progress` for the verbs that move
records (`from-kafka`, `to-kafka`, `zync run`'s quiet stages), and `zync run`'s own status line
(service/status.py).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from typing import TextIO

LIVE_INTERVAL_S = 0.5


class Reporter:
    """A verb's output: one live line redrawn on a terminal, one JSON line per event elsewhere.

    `verb` names the verb in JSON lines, `label` (default: the verb) prefixes the printed lines.
    `quiet`: nothing at all. `live` (default: the stream is a terminal) redraws one line.
    """

    def __init__(self, verb: str, stream: TextIO = sys.stderr, live: bool | None = None, quiet: bool = False,
                 label: str | None = None):
        self.verb = verb
        self.label = label or verb
        self.stream = stream
        self.quiet = quiet
        self.live = (stream.isatty() if live is None else live) and not quiet
        self.started = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

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


class Progress(Reporter):
    """Records moved and their rate, lag per (topic, partition), commits; drawn live or logged.

    `quiet`: nothing at all (zync run reports its stages itself).
    """

    def __init__(self, verb: str, stream: TextIO = sys.stderr, live: bool | None = None, quiet: bool = False,
                 interval_s: float = LIVE_INTERVAL_S):
        super().__init__(verb, stream, live, quiet)
        self.interval_s = interval_s
        self.records = 0  # read (ingest) or published (egress)
        self.committed = 0  # committed to tables (ingest)
        self.commits = 0
        self.lag: dict[tuple[str, int], int] = {}
        self._last = 0.0

    def rate(self) -> float:
        """Records per second: committed ones where this verb commits, else the ones it moved."""
        done = self.committed if self.commits else self.records
        return done / self.elapsed if self.elapsed > 0 else 0.0

    def log(self, event: str, **fields) -> None:
        """One JSON line to the stream (only when not drawing the live line)."""
        if not self.live and not self.quiet:
            self._json(event=event, **fields)

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
        if not self.live or now - self._last < self.interval_s:
            return
        self._last = now
        self._redraw(text)

    def finish(self, summary: str, with_rate: bool = False) -> None:
        """The one summary line: what was done, in how long (and at what rate)."""
        if self.quiet:
            return
        rate = f" ({self.rate():,.0f} records/s)" if with_rate else ""
        self._summary(f"{summary} in {self.elapsed:.1f}s{rate}")


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
