"""SIGINT and SIGTERM as a request to stop `zync run`, from its first moment on.

A supervisor may signal the run's whole process group (systemd's KillMode=control-group,
supervisord's stopasgroup, `kill -TERM -<pgid>`): the Spark driver JVM, a child of the run, then
gets the signal too and exits at once. Installed before the engine starts, these handlers make
the run stop whether the signal came during its start or during a cycle, and whoever got it
first: the run then ends with exit 0 and the step under way finished or abandoned (every stage
resumes where its tables and topics stand, so an abandoned step loses and duplicates nothing).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType, TracebackType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
# Exit statuses of a JVM that a stop signal ended: Java's 128 + signal number after its shutdown
# hooks, or a negative Popen status if it died of the signal itself.
STOPPED_BY_SIGNAL = {128 + s for s in SIGNALS} | {-s for s in SIGNALS}
# How long a JVM's stop may precede this process's own handler (both get a group's signal at once).
HANDLER_GRACE_S = 1.0
# What py4j logs (on the root logger, with a traceback) for each call that met a JVM gone away.
PY4J_SEND_FAILED = "Exception while sending command."


class StopSignals:
    """While installed (a context manager), a stop signal sets `requested`; after one, py4j's traceback
    for a call that met the stopped JVM is not logged (the run says once how it stopped)."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: dict = {}

    def __enter__(self) -> StopSignals:
        self._previous = {sig: signal.signal(sig, self._received) for sig in SIGNALS}
        logging.getLogger().addFilter(self._quiet_after_stop)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        # py4j still meets the JVM when the process ends (objects it frees at exit): the filter stays.

    def _quiet_after_stop(self, record: logging.LogRecord) -> bool:
        return not (self.requested.is_set() and record.getMessage() == PY4J_SEND_FAILED)

    def _received(self, _signum: int, _frame: FrameType | None) -> None:
        self.requested.set()


def stopped_with_the_engine(requested: threading.Event, engine_status: int | None) -> bool:
    """Whether the engine's exit belongs to a stop: a stop was requested (waiting briefly for this
    process's own handler when the JVM's exit status says a stop signal ended it)."""
    if requested.is_set():
        return True
    return engine_status in STOPPED_BY_SIGNAL and requested.wait(HANDLER_GRACE_S)
