"""Peak memory of a benchmarked process and its descendants (the Spark JVM it starts)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


class PeakRss:
    """Samples the RSS of a process and of its descendants (the Spark JVM) until stopped."""

    def __init__(self, pid: int):
        self.pid = pid
        self.python_kb = 0
        self.jvm_kb = 0
        self._cpu_ticks: dict[int, int] = {}  # pid -> its last seen user + system time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _rss_kb(pid: int) -> int:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    @staticmethod
    def _cpu_of(pid: int) -> int | None:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except (OSError, IndexError, ValueError):
            return None

    @property
    def cpu_s(self) -> float:
        """CPU seconds of the process and its descendants, as last sampled (up to 0.25 s before each ended).

        Less bent than wall time by other work on a shared machine.
        """
        return sum(self._cpu_ticks.values()) / TICKS_PER_S

    def _descendants(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
            except (OSError, IndexError, ValueError):
                continue
        found, todo = [], list(children.get(self.pid, []))
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.python_kb = max(self.python_kb, self._rss_kb(self.pid))
            descendants = self._descendants()
            jvm = sum(self._rss_kb(p) for p in descendants)
            self.jvm_kb = max(self.jvm_kb, jvm)
            for pid in (self.pid, *descendants):
                ticks = self._cpu_of(pid)
                if ticks is not None:
                    self._cpu_ticks[pid] = ticks

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
