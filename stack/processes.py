"""A background process zync starts and tracks (`zync up`): its command, folder, pid file and log,
all under the state folder, so that it outlives the command that started it.

The services themselves (stack/services.py, connect_worker.py, postgres.py,
cluster.py) build these; stack/services.py starts, waits for and stops them.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zync.config import state_dir


def java() -> str:
    """The java binary services run with: $JAVA_HOME's, else the one on the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    return str(Path(java_home) / "bin" / "java") if java_home else "java"


@dataclass(frozen=True)
class Service:
    name: str
    port: int
    command: list[str]
    cwd: Path
    # Services other than the broker and the registry bring their own set-up
    # (config files, initdb), readiness check, user to run as and stop signal.
    prepare: Callable[[], None] | None = field(default=None, compare=False)
    ready: Callable[[], bool] | None = field(default=None, compare=False)
    user: str | None = None
    stop_signal: int = signal.SIGTERM
    env_var: str = ""
    data: Path | None = None  # where its data lives, if not in its folder
    env: dict[str, str] | None = field(default=None, compare=False)  # added to this process's environment

    @property
    def folder(self) -> Path:
        return state_dir() / self.name

    @property
    def pid_file(self) -> Path:
        return self.folder / "pid"

    @property
    def log_file(self) -> Path:
        return self.folder / f"{self.name}.log"

    def pid(self) -> int | None:
        """The pid of the running service, or None (a stale pid file is removed)."""
        try:
            pid = int(self.pid_file.read_text())
            reap(pid)
            os.kill(pid, 0)
            return pid
        except (FileNotFoundError, ValueError, ProcessLookupError):
            self.pid_file.unlink(missing_ok=True)
            return None


def reap(pid: int) -> None:
    """Collect the exit of a service this process started (tests do), which would otherwise
    linger as a zombie that still answers os.kill(pid, 0)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child: `zync up` ran in another process
