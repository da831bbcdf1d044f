"""Live progress on a terminal, one summary line at the end, quiet otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, verb: str, stream: TextIO = sys.stderr, interval_s: float = 0.5, quiet: bool = False):
        self.verb = verb
        self.stream = stream
        self.quiet = quiet  # nothing at all: the caller reports (zync run)
        self.live = stream.isatty() and not quiet
        self.interval_s = interval_s
        self.started = time.monotonic()
        self._last = 0.0
        self.records = 0

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def rate(self) -> float:
        return self.records / self.elapsed if self.elapsed > 0 else 0.0

    def update(self, records: int, detail: str = "") -> None:
        self.records = records
        now = time.monotonic()
        if self.live and now - self._last >= self.interval_s:
            self._last = now
            self.stream.write(f"\r{self.verb}: {records:,} records, {self.rate():,.0f}/s {detail}\033[K")
            self.stream.flush()

    def finish(self, summary: str) -> None:
        if self.quiet:
            return
        if self.live:
            self.stream.write("\r\033[K")
        self.stream.write(f"{self.verb}: {summary} in {self.elapsed:.1f}s\n")
        self.stream.flush()
