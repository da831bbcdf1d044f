"""`zync run`'s egress on a thread of its own: outputs published while the next cycle ingests and runs.

A cycle's stages run in order, so an output's new rows used to wait, after
their `dbt run`, for their publish, and the next cycle's ingest and `dbt run`
waited for that publish too: a change arriving meanwhile paid for both. Here
the dbt stage wakes this thread when it ends and the cycle goes on at once;
the thread publishes every output whose table moved (Service.publish, the
same pass as before) and, if woken again meanwhile, publishes again right
after. One thread, so an output has one egress at a time, as before; what
it guarantees is egress's own (the topic's high-water mark, delivered offsets
checked), so a kill -9 anywhere leaves what it left before.

Its reports reach the log with the cycle that ends after them. A step that
must not overlap a publish (a compaction or VACUUM of a table egress may be
reading) waits for the thread to be idle first (`idle`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from zync.progress import StageReport


class EgressThread:
    """Runs `publish` on its own thread each time it is woken (once for any number of wakes meanwhile)."""

    def __init__(self, publish: Callable[[], StageReport | None]):
        self._publish = publish
        self._state = threading.Condition()
        self._due = False  # woken since the publish under way began
        self._busy = False
        self._closed = False
        self._reports: list[StageReport] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="zync-egress", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Publish (again) as soon as the thread is free."""
        with self._state:
            self._due = True
            self._state.notify_all()

    def _loop(self) -> None:
        while True:
            with self._state:
                while not self._due and not self._closed:
                    self._state.wait()
                if self._closed and not self._due:
                    return
                self._due, self._busy = False, True
            report, error = None, None
            try:
                report = self._publish()
            except BaseException as e:  # noqa: BLE001 - handed to the loop, which decides (a dead engine ends the run)
                error = e
            with self._state:
                self._busy = False
                if report is not None:
                    self._reports.append(report)
                if error is not None and self._error is None:
                    self._error = error
                self._state.notify_all()

    def idle(self) -> None:
        """Wait until no publish is under way or due."""
        with self._state:
            while (self._busy or self._due) and self._error is None:
                self._state.wait()

    def take(self) -> list[StageReport]:
        """The reports of the publishes that ended since the last call; raises what a publish raised."""
        with self._state:
            reports, self._reports = self._reports, []
            error, self._error = self._error, None
        if error is not None:
            raise error
        return reports

    def close(self) -> None:
        """Finish the publish under way (and one due), then end the thread."""
        with self._state:
            self._closed = True
            self._state.notify_all()
        self._thread.join()
