"""Record a benchmark's JSON output as a figure of the benchmarks page.

    .venv/bin/python bench/record.py ID bench/out/latency.json [--command "..."] [--date YYYY-MM-DD]
    make bench-report

bench/results/figures.json is the record of the figures docs/benchmarks.md shows: one entry per
figure, keyed by its id, with what was measured (zync's figure and its anchor's from the same run),
the command, the date, the machine and the conditions; git log is its history. A benchmark writes
its raw JSON to bench/out/ (ignored by git). This command reads such a JSON, replaces the measured
part of the entry ID (its table rows, its plot's data, the command, date and machine) and keeps
the entry's question, title, target and notes; an ID not recorded yet is added at the end.
It reads the JSON of:

- bench/latency.py (bench/out/latency.json): p50/p95/p99/max per design at one rate, the outputs
  that arrived; the machine is this one (the JSON does not name it), so record right after the run;
- bench/wide.py (bench/out/wide-<date>T<time>.json): freshness p50/p99 and the first build per N,
  zync run's mirrors against the JDBC sink; command, date and machine from the JSON.

Other entries are edited by hand. Then `make bench-report` draws the plots and writes the page.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "bench" / "results" / "figures.json"
# The measured part of an entry: what a recording replaces.
MEASURED = ("command", "date", "machine", "conditions", "unit", "rows", "bars", "ranges", "groups", "lines")
ORDER = ("id", "question", "heading", "title", "command", "date", "machine", "conditions", "unit", "rows",
         "target", "verdict", "notes", "plot", "bars", "ranges", "groups", "lines")


def dump(value, indent: int = 0, width: int = 150) -> str:
    """JSON with a value on one line when it fits, so an entry's diff is the lines that changed."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + indent <= width or not isinstance(value, (dict, list)) or not value:
        return flat
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dump(v, indent + 2, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    items = [f"{inner}{dump(v, indent + 2, width)}" for v in value]
    return "[\n" + ",\n".join(items) + f"\n{pad}]"


def load(path: Path = FIGURES) -> dict:
    return json.loads(path.read_text())


def save(recorded: dict, path: Path = FIGURES) -> None:
    recorded["figures"] = [{k: f[k] for k in ORDER if k in f} | {k: v for k, v in f.items() if k not in ORDER}
                           for f in recorded["figures"]]
    path.write_text(dump(recorded) + "\n")


def this_machine() -> str:
    memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    cpu = next((name for name in ("AMD EPYC", "Intel Xeon") if name.replace(" ", "(R) ") in model
                or name in model), model)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    jdk = re.search(r'version "(\d+)', java)
    return (f"{os.cpu_count()} cores, {round(memory_kb / 2 ** 20)} GiB RAM ({cpu}), {platform.system()}"
            + (f", JDK {jdk.group(1)}" if jdk else ""))


def _s(value) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def from_latency(report: dict, command: str | None) -> dict:
    """bench/latency.py's JSON: each design's row at the run's (one) rate."""
    rows = report["rows"]
    rates = sorted({r["rate"] for r in rows})
    if len(rates) != 1:
        raise SystemExit(f"a latency figure is one rate; this run measured {rates}")
    names = {"zync-run": ("zync", "zync run"), "chain": ("anchor", "the chain of cold commands (from-kafka, dbt run, to-kafka)"),
             "zync-run-s3": ("zync", "zync run, tables on the S3 server"),
             "zync-run-compiled": ("anchor", "zync run with Spark's generated code for small runs")}
    table, series = [], []
    for r in rows:
        role, label = names.get(r["design"], ("zync", r["design"]))
        lag = "lag bounded" if r["bounded"] else "lag unbounded"
        table.append({"role": role, "label": f"{label}: p50 / p95 / p99 / max",
                      "value": f"{_s(r.get('p50_s'))} / {_s(r.get('p95_s'))} / {_s(r.get('p99_s'))} / {_s(r.get('max_s'))} s; "
                               f"{r['outputs_seen']:,} of {r['outputs_expected']:,} outputs, {r['duplicates']} duplicated; {lag}"})
        series.append({"label": label, "values": [r.get(k) or 0 for k in ("p50_s", "p95_s", "p99_s")], "role": role})
    memory = report.get("zync_run_memory") or {}
    if memory.get("peak_python_mb"):
        table.append({"role": "zync", "label": "zync run's peak RSS, Python + JVM",
                      "value": f"{memory['peak_python_mb']:,} + {memory['peak_jvm_mb']:,} MB"})
    designs = ",".join(r["design"] for r in rows)
    return {"command": command or (f".venv/bin/python bench/latency.py --rates {rates[0]:g} "
                                   f"--duration {report['duration_s']:g} --designs {designs}"),
            "machine": this_machine(), "conditions": "alone; the designs in turn", "unit": "s", "rows": table,
            "groups": {"x": ["p50", "p95", "p99"], "series": series}}


def from_wide(report: dict, command: str | None) -> dict:
    """bench/wide.py's JSON: per N (uniform skew first), zync run's mirrors against the JDBC sink."""
    runs = sorted(report["runs"], key=lambda r: (r["tables"], r["skew"] != "uniform"))
    table, x, ours, sink = [], [], [], []
    for r in runs:
        tag = f"N = {r['tables']}" + ("" if r["skew"] == "uniform" else f", {r['skew']}")
        for side, role, label in (("zync", "zync", "zync run's mirrors"), ("jdbc_sink", "anchor", "Debezium's JDBC sink")):
            f = r[side]
            table.append({"role": role, "label": f"{label}, {tag}: p50 / p99 (first build)",
                          "value": f"{_s(f.get('p50_s'))} / {_s(f.get('p99_s'))} s ({r['first_build_s'][side]:.1f} s); "
                                   f"missing {f['missing']}, lag {'bounded' if f['bounded'] else 'unbounded'}, "
                                   f"rows {'equal' if f['contents']['equal'] else 'NOT equal'}"})
        x += [f"p50, {tag}", f"p99, {tag}"]
        ours += [r["zync"].get("p50_s") or 0, r["zync"].get("p99_s") or 0]
        sink += [r["jdbc_sink"].get("p50_s") or 0, r["jdbc_sink"].get("p99_s") or 0]
    m = report["machine"]
    return {"command": command or f".venv/bin/python {report['command']}", "date": report["date"][:10],
            "machine": f"{m['cores']} cores, {round(m['memory_gb'])} GiB RAM ({m['cpu']}), {m['system'].split()[0]}",
            "conditions": f"alone; whole run {report['whole_run_s']:,} s", "unit": "s", "rows": table,
            "groups": {"x": x, "series": [{"label": "zync run's mirrors", "values": ours, "role": "zync"},
                                          {"label": "Debezium JDBC sink", "values": sink, "role": "anchor"}]}}


def measured(path: Path, command: str | None) -> dict:
    report = json.loads(path.read_text())
    if "runs" in report and "checks" in report:
        return from_wide(report, command)
    if "rows" in report and "rates" in report:
        found = from_latency(report, command)
        found["date"] = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc).date().isoformat()
        return found
    raise SystemExit(f"{path}: no reader for this benchmark's JSON; edit its entry in {FIGURES.relative_to(ROOT)} by hand")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("id", help="the figure's id in bench/results/figures.json")
    p.add_argument("json", type=Path, help="the benchmark's JSON in bench/out/")
    p.add_argument("--command", help="the command as a user runs it (default: from the JSON)")
    p.add_argument("--date", help="the run's date (default: from the JSON, or its file's time)")
    args = p.parse_args()
    found = measured(args.json, args.command)
    if args.date:
        found["date"] = args.date
    recorded = load()
    entry = next((f for f in recorded["figures"] if f["id"] == args.id), None)
    if entry is None:
        entry = {"id": args.id, "question": args.id.replace("_", " ").capitalize(), "title": args.id}
        recorded["figures"].append(entry)
    for key in MEASURED:
        entry.pop(key, None)
    entry.update(found)
    save(recorded)
    print(f"recorded {args.id}: {found['date']}, {found['command']}")
    if entry.get("target"):
        print(f"its target, kept: {entry['target']}: {entry.get('verdict', '-')}; edit the verdict if the run changed it")


if __name__ == "__main__":
    main()
