"""The documentation site builds with `mkdocs build --strict`: a broken link, a missing anchor
or a page left out of the navigation fails it, as `make docs` would."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_docs_build_strict(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    assert mkdocs.exists(), "mkdocs is missing from the venv: `make venv` installs the docs extra"
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    warnings = [line for line in result.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert result.returncode == 0 and not warnings, "\n".join(warnings) or result.stderr[-2000:]
    assert (tmp_path / "site" / "index.html").exists()


def test_every_benchmark_plot_is_drawn():
    """Each plot the benchmarks page shows is one bench/report.py draws from bench/results/figures.json."""
    import json
    import re

    figures = json.loads((ROOT / "bench" / "results" / "figures.json").read_text())["figures"]
    plotted = {f["id"] for f in figures if any(k in f for k in ("bars", "ranges", "groups", "lines"))}
    shown = set(re.findall(r"img/bench/([a-z_0-9]+)\.svg", (ROOT / "docs" / "benchmarks.md").read_text()))
    assert shown == plotted
    assert {p.stem for p in (ROOT / "docs" / "img" / "bench").glob("*.svg")} == plotted
    assert len({f["id"] for f in figures}) == len(figures), "a figure's id is its key: one entry each"


def test_benchmarks_page_is_the_record():
    """The benchmarks page's figures are what bench/results/figures.json records (make bench-report)."""
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
