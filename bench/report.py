"""Write the benchmarks page's figures and plots from the recorded figures.

    make bench-report        # = .venv/bin/python bench/report.py (needs matplotlib: make bench-deps)
    .venv/bin/python bench/report.py --check    # is the page what the record says? (no plots drawn)

Reads bench/results/figures.json (bench/record.py records a benchmark's JSON into it), draws one
SVG per figure with plot data into docs/img/bench/ (bench/plots.py) and rewrites the part of
docs/benchmarks.md between its two `figures` markers: the targets, then one section per question,
each figure a table (zync's figure, the anchor's from the same run, the target, command, date,
machine) and its plot. The rest of the page is written by hand.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from record import load  # noqa: E402

PAGE = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- figures: written by bench/report.py from bench/results/figures.json; edit those, not this -->"
END = "<!-- end of figures -->"
PLOTS = ("bars", "ranges", "groups", "lines")
ROLE = {"zync": "", "anchor": "anchor, same run", "ceiling": "ceiling, same run", "reference": "reference, another run"}


def anchor(title: str) -> str:
    """The id mkdocs gives a heading (the toc extension's default slug)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", title.lower())).strip("-")


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def section(fig: dict, machine: str, heading: str) -> list[str]:
    out = [f"### {heading}", ""] if heading else []
    out += ["| | |", "| --- | --- |"]
    for row in fig.get("rows", []):
        role = ROLE.get(row["role"], row["role"])
        value = f"**{cell(row['value'])}**" if row["role"] == "zync" else cell(row["value"])
        out.append(f"| {role + ': ' if role else ''}{cell(row['label'])} | {value} |")
    if fig.get("target"):
        out.append(f"| target | {cell(fig['target'])}: **{cell(fig.get('verdict') or '-')}** |")
    out.append(f"| command | `{fig['command']}` |")
    out.append(f"| date | {fig['date']} |")
    conditions = f"; {fig['conditions']}" if fig.get("conditions") else ""
    out.append(f"| machine | {cell(fig.get('machine', machine))}{cell(conditions)} |")
    out.append("")
    if any(k in fig for k in PLOTS):
        out += [f"![{fig['title']}](img/bench/{fig['id']}.svg)", ""]
    elif fig.get("plot"):
        out += [f"![{fig['title']}]({fig['plot']})", ""]
    if fig.get("notes"):
        out += [fig["notes"], ""]
    return out


def render(recorded: dict) -> str:
    figures = recorded["figures"]
    machine = recorded["machine"]
    questions: dict[str, list[dict]] = {}
    for fig in figures:
        fig.setdefault("question", fig["title"])  # an entry recorded without one is a question of its own
        questions.setdefault(fig["question"], []).append(fig)
    out = [BEGIN, "", "## Targets", "",
           "| question | target | latest | anchor, same run | date |", "| --- | --- | --- | --- | --- |"]
    for fig in figures:
        if fig.get("target"):
            where = fig.get("heading") or fig["question"]
            anchors = next((r["label"] for r in fig.get("rows", []) if r["role"] == "anchor"), "-")
            out.append(f"| [{cell(fig['question'])}{'' if where == fig['question'] else ': ' + cell(where)}]"
                       f"(#{anchor(where)}) | {cell(fig['target'])} | {cell(fig.get('verdict') or '-')} | "
                       f"{cell(anchors)} | {fig['date']} |")
    out.append("")
    for question, figs in questions.items():
        out += [f"## {question}", ""]
        for i, fig in enumerate(figs):
            out += section(fig, machine, fig.get("heading") or ("" if i == 0 else fig["title"]))
    out.append(END)
    return "\n".join(out)


def rewrite(page: str, block: str) -> str:
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{PAGE.relative_to(ROOT)} has no figures markers")
    head, rest = page.split(BEGIN, 1)
    return head + block + rest.split(END, 1)[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="only compare the page with the record; exit 1 if they differ")
    args = p.parse_args()
    recorded = load()
    page = PAGE.read_text()
    new = rewrite(page, render(recorded))
    if args.check:
        if new != page:
            raise SystemExit(f"{PAGE.relative_to(ROOT)} is not what bench/results/figures.json says: run make bench-report")
        return
    from plots import draw
    out = ROOT / "docs" / "img" / "bench"
    drawn = set()
    for fig in recorded["figures"]:
        if any(k in fig for k in PLOTS):
            drawn.add(draw(fig, fig.get("machine", recorded["machine"]), out).name)
    for stale in out.glob("*.svg"):
        if stale.name not in drawn:
            stale.unlink()
    PAGE.write_text(new)
    print(f"{PAGE.relative_to(ROOT)}: {len(recorded['figures'])} figures, {len(drawn)} plots")


if __name__ == "__main__":
    main()
