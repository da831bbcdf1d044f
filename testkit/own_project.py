"""A project of one's own made by `zync init`, driven as a user drives it: its commands run from its
folder, in a shell that knows nothing of the repository (shared by the tests of `zync init` and of
the "Your own database" page)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from testkit.invoices import ROOT

BIN = ROOT / ".venv" / "bin"


def run_in(folder: Path, program: str, *args: str | Path, timeout: float = 600) -> str:
    """`program` (zync, dbt) from the venv with `args` in `folder`; its output, or an assertion naming it."""
    # The suite points zync at the repository and turns the demo on; a user's shell does neither.
    env = {k: v for k, v in os.environ.items() if k not in ("ZYNC_PROJECT_DIR", "ZYNC_DEMO")}
    done = subprocess.run([str(BIN / program), *map(str, args)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, (f"{program} {' '.join(map(str, args))} exited {done.returncode}:\n"
                                  f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def use_connections(project: Path, kafka: dict, schema_registry: dict) -> None:
    """profiles/zync.yml's `local` entry with these `kafka` and `schema_registry` sections, as a user
    replaces the embedded services' with their own (nothing else of the project changes)."""
    settings = project / "profiles" / "zync.yml"
    entries = yaml.safe_load(settings.read_text())
    assert set(entries["local"]) == {"kafka", "schema_registry"}, "zync init's zync.yml changed shape"
    entries["local"] = {"kafka": kafka, "schema_registry": schema_registry}
    settings.write_text(yaml.safe_dump(entries, sort_keys=False))
