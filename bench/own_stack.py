"""A benchmark's own Kafka, registry and catalog: its state folder and ports, started afresh, stopped after."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def zync(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / ".venv" / "bin" / "zync"), *args], cwd=ROOT, capture_output=True, text=True)


@contextmanager
def own_stack(state: Path, ports: dict[str, str], *up_args: str) -> Iterator[None]:
    """`zync up [up_args]` in `state` (emptied first) on `ports` for the block, `zync down` after it,
    however it ends."""
    os.environ.update({**ports, "ZYNC_STATE_DIR": str(state), "ZYNC_TARGET": "local", "ZYNC_PROJECT_DIR": str(ROOT)})
    shutil.rmtree(state, ignore_errors=True)
    up = zync("up", *up_args)
    if up.returncode != 0:
        raise SystemExit(f"zync up failed:\n{up.stdout}{up.stderr}")
    try:
        yield
    finally:
        zync("down")
