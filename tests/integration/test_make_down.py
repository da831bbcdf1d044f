"""`make down` stops the services of every state folder the project's commands use (`zync up`'s and
each demo's, which run on ports and folders of their own), not only the default one."""
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Each start below runs in a process of its own: the state folder is read from the environment.
START_CATALOG = ("from stack import services; from zync.config import load_target; "
                 "print(*services.up(load_target('local'), only={'catalog'}), sep='\\n')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_make_down_stops_every_state_folders_services(tmp_path):
    # A `.local` of its own: `make down` must not stop the suite's services (in the real .local/test-state).
    local = tmp_path / "local"
    pids = {}
    try:
        for name in ("state", "demo-database-state"):
            env = {**os.environ, "ZYNC_STATE_DIR": str(local / name), "ZYNC_CATALOG_PORT": str(_free_port())}
            subprocess.run([sys.executable, "-c", START_CATALOG], cwd=ROOT, env=env, check=True, timeout=300)
            pids[name] = int((local / name / "catalog" / "pid").read_text())
        assert all(_alive(pid) for pid in pids.values())

        result = subprocess.run(["make", "--no-print-directory", "down", f"LOCAL={local}"],
                                cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        still = {name: pid for name, pid in pids.items() if _alive(pid)}
        assert not still, f"make down left running: {still}\n{result.stdout}"
        for name, pid in pids.items():
            assert f"{local / name}:" in result.stdout and f"catalog: stopped (pid {pid})" in result.stdout
    finally:
        for pid in pids.values():
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
