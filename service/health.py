"""Is `zync run` healthy? The engine alive, the catalog and broker reachable, a cycle ended recently.

Answered at /healthz (service/http_server.py) for a container orchestrator's probe or
a load balancer, and to systemd's watchdog (service/watchdog.py). Each check
is cheap: the JVM's exit status (no call into it), a TCP connection to the
catalog's database server, one metadata request to the broker on a client of
its own; the broker's and catalog's answers are kept for a second, so probes
in a burst cost one of each.

"Recent" is a bound in seconds (--stale-after), not a count of --interval:
a cycle that carries work lasts many intervals (tens of seconds; a backfill
minutes), and the last cycle's end is what a hung stage stops moving.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_STALE_AFTER_S = 600.0
CHECK_TIMEOUT_S = 2.0
KEEP_ANSWER_S = 1.0


@dataclass(frozen=True)
class HealthReport:
    ok: bool
    checks: dict[str, str]  # check -> "ok" or why not

    def as_json(self) -> dict:
        failing = {k: v for k, v in self.checks.items() if v != "ok"}
        return {"status": "ok" if self.ok else "unhealthy", "checks": self.checks,
                **({"reason": "; ".join(f"{k}: {v}" for k, v in failing.items())} if failing else {})}


def tcp_check(address: tuple[str, int] | None) -> str:
    """'ok' if a TCP connection to `address` opens (None: nothing to check), else why not."""
    if address is None:
        return "ok"
    try:
        with socket.create_connection(address, timeout=CHECK_TIMEOUT_S):
            return "ok"
    except OSError as e:
        return f"cannot connect to {address[0]}:{address[1]}: {e}"


class Health:
    def __init__(self, engine_problem: Callable[[], str | None], catalog: Callable[[], str],
                 broker: Callable[[], str], stale_after_s: float = DEFAULT_STALE_AFTER_S,
                 clock: Callable[[], float] = time.monotonic):
        if stale_after_s <= 0:
            raise ValueError(f"--stale-after must be more than 0, not {stale_after_s}")
        self.engine_problem = engine_problem
        self.catalog = catalog
        self.broker = broker
        self.stale_after_s = stale_after_s
        self.clock = clock
        self.started = clock()
        self.last_cycle: float | None = None
        self._kept: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def cycle_ended(self) -> None:
        self.last_cycle = self.clock()

    def _kept_answer(self, name: str, check: Callable[[], str]) -> str:
        with self._lock:
            kept = self._kept.get(name)
            if kept is not None and self.clock() - kept[0] < KEEP_ANSWER_S:
                return kept[1]
        try:
            answer = check()
        except Exception as e:  # noqa: BLE001 - any failure of a check is its answer
            answer = str(e) or type(e).__name__
        with self._lock:
            self._kept[name] = (self.clock(), answer)
        return answer

    def _cycle(self) -> str:
        now = self.clock()
        if self.last_cycle is None:
            age = now - self.started
            return "ok" if age <= self.stale_after_s else \
                f"no cycle has ended in the {age:.0f}s since the start (--stale-after {self.stale_after_s:.0f}s)"
        age = now - self.last_cycle
        return "ok" if age <= self.stale_after_s else \
            f"the last cycle ended {age:.0f}s ago, more than --stale-after {self.stale_after_s:.0f}s: a stage hangs"

    def check(self) -> HealthReport:
        engine = self.engine_problem()
        checks = {
            "engine": "ok" if engine is None else engine,
            "catalog": self._kept_answer("catalog", self.catalog),
            "broker": self._kept_answer("broker", self.broker),
            "cycle": self._cycle(),
        }
        return HealthReport(all(v == "ok" for v in checks.values()), checks)
