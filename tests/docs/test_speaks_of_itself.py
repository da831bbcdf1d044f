"""The project speaks of itself only: no page, script or module names a lock or folder of the
machines it was built on, which no user has (a benchmark's command is the command a user runs)."""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What only the machine a clone sits on has: the folders above the clone (where other clones, and a
# lock file shared by their commands, would live), and commands run under a lock.
FOREIGN = tuple(f"{folder}/" for folder in (ROOT.parent, ROOT.parent.parent) if folder != Path("/")) + ("flock ",)


def test_no_tracked_text_names_the_teams_machines():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    found = []
    for name in tracked.splitlines():
        path = ROOT / name
        if path.suffix in (".svg", ".png", ".jar") or not path.is_file() or path == Path(__file__).resolve():
            continue
        text = path.read_text(errors="replace")
        found += [f"{name}: {word}" for word in FOREIGN if word in text]
    assert not found, "\n".join(found)
