"""Draw the documentation's benchmark plots from the recorded figures.

    .venv/bin/python bench/plots.py [--figures bench/results/figures.json] [--out docs/img/bench]

Each benchmark writes its raw JSON to bench/out/ (ignored by git); the figures
worth keeping are recorded, with their command, date, machine and conditions, in
bench/results/figures.json (bench/record.py), and this command draws one SVG per
figure with plot data for docs/benchmarks.md (`make bench-report` runs it with
the page's tables: bench/report.py). zync's bars are blue, the anchor's (what a user would run
instead, measured in the same run) orange, a ceiling grey. Needs matplotlib
(`make bench-deps`).
"""
from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLOURS = {"zync": "#1f77b4", "anchor": "#ff7f0e", "ceiling": "#9e9e9e"}


def caption(fig: dict, machine: str) -> str:
    return "\n".join([fig["command"], *textwrap.wrap(f"{fig['date']}, {machine}; {fig['conditions']}", 120)])


def draw(fig: dict, machine: str, out: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = fig["id"]  # stable ids: a redraw of the same figures changes no byte
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: small files, searchable figures
    width = 8.0
    if "bars" in fig:
        bars = fig["bars"]
        f, ax = plt.subplots(figsize=(width, 0.5 * len(bars) + 1.6))
        labels = [b["label"] for b in bars][::-1]
        values = [b["value"] for b in bars][::-1]
        ax.barh(labels, values, color=[COLOURS[b["role"]] for b in bars][::-1])
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:,}", va="center", fontsize=8)
        ax.set_xlabel(fig["unit"])
        ax.set_xlim(0, max(values) * 1.18)
    elif "ranges" in fig:
        ranges = fig["ranges"][::-1]
        f, ax = plt.subplots(figsize=(width, 0.45 * len(ranges) + 1.6))
        for y, r in enumerate(ranges):
            ax.barh(y, r["max"] - r["min"], left=r["min"], height=0.5, color=COLOURS[r["role"]])
            ax.text(r["max"], y, f" {r['min']}-{r['max']}", va="center", fontsize=8)
        ax.set_yticks(range(len(ranges)), [r["label"] for r in ranges])
        ax.set_xlabel(fig["unit"])
        ax.set_xlim(0, max(r["max"] for r in ranges) * 1.2)
    elif "groups" in fig:
        groups = fig["groups"]
        f, ax = plt.subplots(figsize=(width, 3.6))
        n = len(groups["series"])
        step = 0.8 / n
        for i, s in enumerate(groups["series"]):
            xs = [x + (i - (n - 1) / 2) * step for x in range(len(groups["x"]))]
            colour = COLOURS[s["role"]] if n <= 2 or s["role"] != "zync" else (COLOURS["zync"], "#6baed6")[i % 2]
            ax.bar(xs, s["values"], width=step, label=s["label"], color=colour)
            for x, v in zip(xs, s["values"]):
                ax.text(x, v, f"{v:g}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(groups["x"])), groups["x"])
        ax.set_ylabel(fig["unit"])
        ax.legend(fontsize=8)
    else:
        lines = fig["lines"]
        f, ax = plt.subplots(figsize=(width, 3.6))
        for s in lines["series"]:
            ax.plot(lines["x"], s["values"], marker="o", label=s["label"], color=COLOURS[s["role"]])
        if lines.get("log_x"):
            ax.set_xscale("log")
        ax.set_xlabel(lines["x_label"])
        ax.set_ylabel(fig["unit"])
        ax.set_ylim(0, None)
        ax.legend(fontsize=8)
    ax.set_title(fig["title"], fontsize=10)
    f.text(0.01, 0.005, caption(fig, machine), fontsize=6.5, family="monospace", va="bottom")
    f.tight_layout(rect=(0, 0.1, 1, 1))
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{fig['id']}.svg"
    f.savefig(path, format="svg", metadata={"Date": None})
    plt.close(f)
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--figures", type=Path, default=ROOT / "bench" / "results" / "figures.json")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "bench")
    args = p.parse_args()
    recorded = json.loads(args.figures.read_text())
    for fig in recorded["figures"]:
        if any(k in fig for k in ("bars", "ranges", "groups", "lines")):
            print(draw(fig, fig.get("machine", recorded["machine"]), args.out).relative_to(ROOT))


if __name__ == "__main__":
    main()
