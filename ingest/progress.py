"""Ingest progress: a live line on a terminal (records, records/s, lag per partition),
a quiet structured log line per commit otherwise, and one summary line at exit."""

from __future__ import annotations

import json
import sys
import time
from typing import TextIO

LIVE_INTERVAL_S = 0.5


class IngestProgress:
    def __init__(self, stream: TextIO = sys.stderr, live: bool | None = None, quiet: bool = False):
        self.stream = stream
        # quiet: nothing at all (zync run reports its stages itself).
        self.quiet = quiet
        self.live = (stream.isatty() if live is None else live) and not quiet
        self.started = time.monotonic()
        self.records = 0
        self.committed = 0
        self.commits = 0
        self.lag: dict[tuple[str, int], int] = {}
        self._last = 0.0

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.committed / elapsed if elapsed > 0 else 0.0

    def log(self, event: str, **fields) -> None:
        """One JSON line to stderr (only when not drawing the live line)."""
        if not self.live and not self.quiet:
            record = {"ts": round(time.time(), 3), "verb": "from-kafka", "event": event, **fields}
            self.stream.write(json.dumps(record, default=str) + "\n")
            self.stream.flush()

    def read(self, records: int) -> None:
        self.records += records
        self._draw()

    def commit(self, table: str, records: int, offsets: dict[int, int], **extra) -> None:
        self.committed += records
        self.commits += 1
        self.log("commit", table=table, records=records, next_offsets=offsets, **extra)
        self._draw()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.live or (not force and now - self._last < LIVE_INTERVAL_S):
            return
        self._last = now
        lag = " ".join(f"{t}[{p}]:{n:,}" for (t, p), n in sorted(self.lag.items()))
        self.stream.write(f"\rfrom-kafka: {self.committed:,} records committed ({self.records:,} read), "
                          f"{self.rate():,.0f}/s, lag {lag or '-'}\033[K")
        self.stream.flush()

    def finish(self, summary: str) -> None:
        if self.quiet:
            return
        if self.live:
            self.stream.write("\r\033[K")
        elapsed = time.monotonic() - self.started
        self.stream.write(f"from-kafka: {summary} in {elapsed:.1f}s ({self.rate():,.0f} records/s)\n")
        self.stream.flush()
