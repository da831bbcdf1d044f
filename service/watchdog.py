"""systemd's watchdog, fed from the health check (sd_notify's protocol, no library).

Under a unit with `Type=notify` and `WatchdogSec=`, systemd passes
NOTIFY_SOCKET and WATCHDOG_USEC. The run says READY=1 once its first cycle
ended healthy, then WATCHDOG=1 every half WATCHDOG_USEC while the health check
(service/health.py) passes. When it fails (a hung stage, the catalog or broker
out of reach for longer than WatchdogSec) the pings stop and systemd kills
and, with `Restart=on-failure`, restarts the service; a dead engine ends the
run by itself (exit 1). Without NOTIFY_SOCKET nothing is sent.
"""

from __future__ import annotations

import os
import socket
import threading

from service.health import Health


def notify(message: str, environ: dict[str, str] | None = None) -> bool:
    """Send one sd_notify datagram; False when there is no NOTIFY_SOCKET (not under systemd) or it fails."""
    path = (environ if environ is not None else os.environ).get("NOTIFY_SOCKET")
    if not path:
        return False
    if path.startswith("@"):  # an abstract socket
        path = "\0" + path[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), path)
        return True
    except OSError:
        return False


class Watchdog:
    def __init__(self, health: Health, environ: dict[str, str] | None = None):
        self.health = health
        self.environ = dict(os.environ if environ is None else environ)
        usec = self.environ.get("WATCHDOG_USEC", "")
        self.every_s = int(usec) / 2e6 if usec.isdigit() and int(usec) > 0 else None
        self.ready = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        return bool(self.environ.get("NOTIFY_SOCKET"))

    def cycle_ended(self) -> None:
        """After each cycle: the first healthy one makes the service ready, and starts the pings."""
        if self.ready or not self.active or not self.health.check().ok:
            return
        self.ready = notify("READY=1", self.environ)
        if self.ready and self.every_s:
            self._thread = threading.Thread(target=self._ping, name="zync-watchdog", daemon=True)
            self._thread.start()

    def _ping(self) -> None:
        while not self._stop.wait(self.every_s):
            if self.health.check().ok:
                notify("WATCHDOG=1", self.environ)

    def stopping(self) -> None:
        self._stop.set()
        if self.active:
            notify("STOPPING=1", self.environ)
