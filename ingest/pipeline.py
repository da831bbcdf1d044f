"""One commit in flight: Spark writes batch N while the consumer reads batch N+1.

Consuming is Python and librdkafka; decoding and writing a batch is the JVM.
Run one after the other (as ingest did), each waits for the other. With one
background commit at a time the two overlap, and commits still land in the
order the batches were read, so the table's offsets stay the resume point.
Memory stays bounded: at most the batch being written and the one being read.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class OneInFlight:
    """Run jobs on one background thread, one at a time, in submission order."""

    def __init__(self, name: str = "zync-commit"):
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: Future | None = None

    def submit(self, job: Callable[..., Any], *args: Any) -> None:
        """Wait for the job in flight (raising its error, if any), then start this one."""
        self.wait()
        self._pending = self._executor.submit(job, *args)

    def wait(self) -> None:
        """Block until the job in flight is done; raise the error it ended with."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    @property
    def busy(self) -> bool:
        return self._pending is not None and not self._pending.done()

    def close(self) -> None:
        self._executor.shutdown(wait=True)
