"""Peak memory of a benchmarked process and its descendants (the Spark JVM it starts)."""

from __future__ import annotations

import threading
from pathlib import Path


class PeakRss:
    """Samples the RSS of a process and of its descendants (the Spark JVM) until stopped."""

    def __init__(self, pid: int):
        self.pid = pid
        self.python_kb = 0
        self.jvm_kb = 0
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
            jvm = sum(self._rss_kb(p) for p in self._descendants())
            self.jvm_kb = max(self.jvm_kb, jvm)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
