"""The project layout page names every folder and every `zync run` module the project has.

Each row of its table describes one folder; a folder (or a service module) added without a word
on the page fails here, naming the row it belongs in.
"""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "layout.md"
# Folders whose sub-folders (or modules) each need a word: in the parent's row or a row of their own.
DESCRIBED_INSIDE = {"demo": "/", "tests": "/", "macros/etl": "/", "macros/mirror": "/", "service": ".py"}


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [Path(line) for line in out.splitlines() if (ROOT / line).exists()]


def _row(text: str, folder: str) -> str:
    """The table row whose first cell names `folder/` (possibly beside others), or ''."""
    for line in text.splitlines():
        first = line.split("|")[1] if line.startswith("|") else ""
        if f"`{folder}/`" in first:
            return line
    return ""


def test_every_folder_and_service_module_is_on_the_layout_page():
    text = PAGE.read_text()
    files = _tracked()
    missing = [f"`{top}/`" for top in sorted({f.parts[0] for f in files if len(f.parts) > 1 and not f.parts[0].startswith(".")})
               if f"`{top}/" not in text]
    for parent, kind in DESCRIBED_INSIDE.items():
        depth = len(Path(parent).parts)
        inside = {f.parts[depth] for f in files if f.parts[:depth] == Path(parent).parts
                  and (len(f.parts) > depth + 1 if kind == "/" else f.suffix == kind)}
        names = sorted(n if kind == ".py" else n + "/" for n in inside if n != "__init__.py")
        row = _row(text, parent)
        # Named in the parent's row, or with its whole path anywhere (a row of its own).
        missing += [f"`{parent}/{name}`" for name in names if f"`{name}`" not in row and f"`{parent}/{name}`" not in text]
    assert not missing, f"{PAGE.relative_to(ROOT)} does not name: " + ", ".join(missing)
