"""Benchmark: one `zync run` for hours at a steady rate; does it stay as fast, as small and as tidy as it started?

    .venv/bin/python bench/soak.py [--hours 1 | --minutes M] [--rate 100]
        [--window 5m] [--tables 4] [--rows 200] [--seed 1] [--keep] [--no-plot]

One command, alone on the machine: it starts its own Kafka, registry and catalog (`zync up`, its own
state folder .local/bench-soak-state and ports) and stops them at the end (--keep leaves them).

The project: zync's invoices transform and its mirror (bench/latency.py's stream: invoices created
with their status, status and item updates, every 4th deleted) plus a whole database's shape,
--tables Debezium tables mirrored by one `topics:` entry (bench/wide.py's source: updates, creates,
deletes with their tombstones, --rows snapshot rows each). One `zync run` process runs it all with
its defaults (compaction after 50 commits, VACUUM after 7 days, --metrics on loopback). Half of
--rate goes to the invoices, half to the database's tables, for the whole duration.

Per --window (default 5 minutes) of produce time:
- latency p50/p99 from the produce call to the output record consumed from NewInvoices, and to the
  change visible in its mirror (the raw commit holding its offset: mirrors are merge-on-read;
  bench/wide.py `visible_at`), the invoices mirror and the database's together;
- resident memory of `zync run`'s Python process and of its Spark JVM, the JVM heap after its last
  GC (zync_engine_heap_after_gc_bytes from its /metrics), each the window's last sample;
- data files per table (live, zync_table_files; and on disk, what VACUUM has not removed yet), the
  bytes on disk of the project's tables, `zync run`'s busy cycles and their p50 seconds.
And once: the time to the first output after the start (the first invoice round, produced as soon
as `zync run` has loaded its project, to its last output record).

Targets: the last window's p50 (produce -> output) within 1.2x of the first's; resident memory and
files per table flat: the least-squares trend over the last half of the run's samples adds less than
10 % (memory) or 20 % and 5 files (files) over that half; disk growing with the data only over that
half too (the bytes on disk per produced event, the last window against the half-way one, within
1.25x: compaction rewrites each byte a few times, service/compaction.py, so the bytes it keeps for
VACUUM's retention grow with the data; rewriting a table's compacted file at every compaction made
them grow with its square, +50 % over the second hour-half). The first windows are start-up: no
compaction has run yet. JSON and a plot (PNG, matplotlib:
`make bench-deps`) with the command, date and machine in bench/out/soak-<date>T<time>.{json,png}.
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import json
import os
import random
import shutil
import statistics
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "bench" / "out"
STATE = ROOT / ".local" / "bench-soak-state"
PORTS = {"ZYNC_KAFKA_PORT": "24892", "ZYNC_REGISTRY_PORT": "24881", "ZYNC_CATALOG_PORT": "25227"}
METRICS_PORT = 24871
SCHEMA, SERVER, PARTITION = "zync", "soakdb", 0
MEMORY_TREND, FILES_TREND, FILES_TREND_MIN, P50_RATIO, BYTES_RATIO = 0.10, 0.20, 5, 1.2, 1.25

# bench/latency.py points the environment at its own services when imported: the soak keeps its
# own (or, in the test suite, the suite's).
_environment = dict(os.environ)
from bench import latency, wide  # noqa: E402
os.environ.clear()
os.environ.update(_environment)


# ---------------------------------------------------------------------------
# Pure figures (tests/unit/test_soak_bench.py)


def visibility(commits: list[wide.Commit], partition: int = PARTITION):
    """offset -> when it became visible (the first commit reaching it) or None: wide.visible_at, by bisection."""
    reach, times, best = [], [], -1
    for commit in sorted(commits, key=lambda c: c.version):
        if commit.reach.get(partition, -1) > best:
            best = commit.reach[partition]
            reach.append(best)
            times.append(commit.at)

    def at(offset: int) -> float | None:
        i = bisect.bisect_left(reach, offset)
        return times[i] if i < len(reach) else None

    return at


def trend(samples: list[tuple[float, float]]) -> float | None:
    """The least-squares line's rise over the samples' time span (same unit as the values); None if < 3."""
    if len(samples) < 3:
        return None
    ts, vs = [t for t, _ in samples], [v for _, v in samples]
    mean_t, mean_v = statistics.fmean(ts), statistics.fmean(vs)
    spread = sum((t - mean_t) ** 2 for t in ts)
    if spread == 0:
        return 0.0
    slope = sum((t - mean_t) * (v - mean_v) for t, v in samples) / spread
    return slope * (max(ts) - min(ts))


def flat(samples: list[tuple[float, float]], share: float, at_least: float = 0.0) -> bool | None:
    """Whether the last half of the samples rises by less than `share` of its mean (and `at_least`)."""
    if not samples:
        return None
    middle = (samples[0][0] + samples[-1][0]) / 2
    half = [s for s in samples if s[0] >= middle]
    rise = trend(half)
    if rise is None:
        return None
    return rise < max(share * statistics.fmean(v for _, v in half), at_least)


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50_s": None, "p99_s": None, "n": 0}
    return {"p50_s": round(wide.percentile(values, 0.5), 2), "p99_s": round(wide.percentile(values, 0.99), 2),
            "n": len(values)}


@dataclass
class Sample:
    at: float
    python_mb: float
    jvm_mb: float
    heap_after_gc_mb: float | None
    live_files: dict[str, int]  # table -> data files in its current version
    disk_files: dict[str, int]  # table -> data files in its folder
    disk_bytes: int
    busy_cycles: int | None


def windows(start: float, end: float, width: float, output: list[tuple[float, float | None]],
            mirror: list[tuple[float, float | None]], samples: list[Sample], cycles: list[dict],
            events: list[float]) -> list[dict]:
    """Per window of `width` seconds from `start`: the figures the report prints and plots."""
    found = []
    count = max(1, int((end - start) // width + (1 if (end - start) % width > width / 10 else 0)))
    for k in range(count):
        low, high = start + k * width, min(end, start + (k + 1) * width)
        inside = [s for s in samples if low <= s.at < high] or [s for s in samples if s.at < high][-1:]
        last = inside[-1] if inside else None
        cyc = [c for c in cycles if low <= c["ts"] < high]
        found.append({
            "window": k + 1, "from_s": round(low - start), "to_s": round(high - start),
            "events": sum(1 for t in events if low <= t < high),
            "output": percentiles([v - p for p, v in output if low <= p < high and v is not None]),
            "mirror": percentiles([v - p for p, v in mirror if low <= p < high and v is not None]),
            "python_rss_mb": last and round(last.python_mb), "jvm_rss_mb": last and round(last.jvm_mb),
            "heap_after_gc_mb": last and last.heap_after_gc_mb and round(last.heap_after_gc_mb),
            "files_per_table_max": last and max(last.live_files.values(), default=0),
            "files_per_table_mean": last and round(statistics.fmean(last.live_files.values()), 1)
            if last and last.live_files else None,
            "disk_files_max": last and max(last.disk_files.values(), default=0),
            # Kilobytes show: a short soak's tables hold a few tens of them.
            "disk_mb": last and round(last.disk_bytes / 2 ** 20, 3),
            "cycles": len(cyc), "cycle_p50_s": round(statistics.median(c["seconds"] for c in cyc), 1) if cyc else None,
        })
    return found


def verdicts(report: dict) -> dict[str, bool | None]:
    """The targets, from a report's windows and samples."""
    ws = [w for w in report["windows"] if w["output"]["p50_s"] is not None]
    first, last = (ws[0], ws[-1]) if ws else (None, None)
    samples = report["samples"]
    per_event = [w["disk_mb"] / max(1, sum(x["events"] for x in report["windows"][:i + 1]))
                 for i, w in enumerate(report["windows"]) if w["disk_mb"] is not None]
    return {
        "last_p50_within_1.2x_first": None if first is None or len(ws) < 2
        else last["output"]["p50_s"] <= P50_RATIO * first["output"]["p50_s"],
        "python_rss_flat": flat([(s["at"], s["python_mb"]) for s in samples], MEMORY_TREND),
        "jvm_rss_flat": flat([(s["at"], s["jvm_mb"]) for s in samples], MEMORY_TREND),
        "files_per_table_flat": flat([(s["at"], max(s["live_files"].values(), default=0)) for s in samples],
                                     FILES_TREND, FILES_TREND_MIN),
        "disk_grows_with_data": None if len(per_event) < 2
        else per_event[-1] <= BYTES_RATIO * per_event[(len(per_event) - 1) // 2],
    }


# ---------------------------------------------------------------------------
# The running parts


class InvoiceProducer(latency.Producer):
    """bench/latency.py's producer, also noting when each Invoices event was produced: its offset's
    produce time (one partition, a fresh topic, an idempotent producer: the n-th event is offset n)."""

    def __init__(self, target, project):
        super().__init__(target, project)
        self.invoice_times: list[float] = []
        self.event_times: list[float] = []

    def produce(self, event) -> None:
        super().produce(event)
        now = time.time()
        self.event_times.append(now)
        if event.topic == "Invoices":
            self.invoice_times.append(now)


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def rss_mb(pid: int | None) -> float:
    from bench.rss import PeakRss

    return PeakRss._rss_kb(pid) / 1024 if pid else 0.0


def folder_files(folder: Path) -> tuple[int, int]:
    """(data files, bytes) under a table's folder, its log aside."""
    files = size = 0
    for path, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        for name in names:
            if name.endswith(".parquet"):
                files += 1
            try:
                size += os.path.getsize(os.path.join(path, name))
            except OSError:
                pass
    return files, size


class Sampler(threading.Thread):
    """Every `every` seconds: memory, heap after GC, files and bytes per table, busy cycles."""

    def __init__(self, run: wide.ZyncRun, tables: dict[str, Path], port: int, every: float):
        super().__init__(daemon=True)
        self.run_, self.tables, self.port, self.every = run, tables, port, every
        self.samples: list[Sample] = []
        self._stopping = threading.Event()

    def sample(self) -> Sample:
        from testkit.harness import engine_pid

        metrics: dict = {}
        try:
            metrics = scrape(self.port)
        except OSError:
            pass
        live = {name: int(v) for (metric, labels), v in metrics.items() if metric == "zync_table_files"
                for name in [dict(labels)["table"].split(".")[-1]] if name in self.tables}
        disk_files, disk_bytes = {}, 0
        for name, folder in self.tables.items():
            files, size = folder_files(folder)
            disk_files[name] = files
            disk_bytes += size
        heap = metrics.get(("zync_engine_heap_after_gc_bytes", ()))
        busy = metrics.get(("zync_cycles_total", (("work", "true"),)))
        pid = self.run_.process.pid
        return Sample(time.time(), rss_mb(pid), rss_mb(engine_pid(pid)), heap / 2 ** 20 if heap else None,
                      live, disk_files, disk_bytes, None if busy is None else int(busy))

    def run(self) -> None:
        while not self._stopping.wait(self.every):
            self.samples.append(self.sample())

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)
        self.samples.append(self.sample())


@dataclass
class Soak:
    """What one soak run needs: where its project goes, how long, how fast, how it is sliced."""

    folder: Path
    seconds: float
    rate: float
    window_s: float
    tables: int = 4
    rows: int = 200
    seed: int = 1
    sample_s: float = 30.0
    drain_s: float = 600.0
    metrics_port: int = METRICS_PORT
    figures: dict[str, Any] = field(default_factory=dict)


def soak_project(target, spec: Soak, transforms: dict[str, str] | None = None):
    """The soak's project in spec.folder, compiled: the invoices transform and its mirror, the database's
    `topics:` entry, and `transforms` (file name -> text) beside them; returns it with the database source.

    `transforms` lets one `zync run` carry other projects' models too (a test's, which then shares the
    soak's process instead of starting a JVM of its own)."""
    from testkit.invoices import invoices_project

    spec.folder.mkdir(parents=True, exist_ok=True)
    project = invoices_project(spec.folder, "Soak")
    source = wide.Source(target, SERVER, spec.tables, spec.seed)
    (project.path / "transforms" / "database.yml").write_text(wide.pattern_mirror_file(SERVER, source.topics))
    for name, text in (transforms or {}).items():
        (project.path / "transforms" / name).write_text(text)
    compiled = wide.zync("etl", "compile", cwd=project.path)
    if compiled.returncode != 0:
        raise SystemExit(f"zync etl compile failed:\n{compiled.stdout}{compiled.stderr}")
    return project, source


def soak(target, spec: Soak, prepared=None, run: wide.ZyncRun | None = None) -> dict:
    """Run the soak on the services `target` names; the report (the caller prints, plots and saves it).

    prepared: soak_project's answer, and run: a `zync run` of that project already going (the soak
    then measures from where it stands; it stops it all the same)."""
    from zync.config import state_dir
    from zync.tables import raw_table_name

    project, source = prepared or soak_project(target, spec)
    warehouse = state_dir() / "warehouse" / f"{SCHEMA}.db"
    raw = {t: raw_table_name(topic) for t, topic in zip(source.tables, source.topics)}
    mirrors = {t: wide.mirror_name(SERVER, t) for t in source.tables}
    invoices_mirror, raw_invoices = project.name("invoices_mirror"), project.name("raw_invoices")
    folders = {name: warehouse / name for name in
               [raw_invoices, project.name("raw_invoice_status"), project.name("new_invoices"),
                f"{invoices_mirror}__base", *raw.values(), *(f"{m}__base" for m in mirrors.values())]}

    producer = InvoiceProducer(target, project)
    consumer = latency.Consumer(target, project.output_topic)
    consumer.start()
    run = run or wide.ZyncRun(project.path, spec.folder / "zync-run.log",
                              options=("--metrics", f"127.0.0.1:{spec.metrics_port}"))
    sampler = Sampler(run, folders, spec.metrics_port, spec.sample_s)
    logs = {t: wide.MirrorLog(warehouse, mirrors[t], raw[t], run.built_at) for t in source.tables}
    invoice_log = wide.MirrorLog(warehouse, invoices_mirror, raw_invoices, run.built_at)
    report: dict[str, Any] = {"rate": spec.rate, "seconds": spec.seconds, "window_s": spec.window_s,
                              "tables": spec.tables, "rows": spec.rows}
    try:
        ready = run.wait_ready()
        # The first invoice round as soon as the project is loaded: the time to the first output.
        first_produced = time.time()
        for event in latency.invoice_round(0):
            producer.produce(event)
        producer.producer.flush(30)
        deadline = time.monotonic() + spec.drain_s
        while not all(sig in consumer.arrived for sig in producer.produced_at):
            run.check()
            if time.monotonic() > deadline:
                raise SystemExit(f"the first invoice round did not reach its output; see {run.log}")
            time.sleep(0.2)
        report["ready_s"] = round(ready, 1)
        report["first_output_after_start_s"] = round(max(consumer.arrived.values()) - run.started, 1)
        report["first_output_after_produce_s"] = round(max(consumer.arrived.values()) - first_produced, 1)
        # The database's snapshot, built before the clock starts.
        source.snapshot(spec.rows)
        while not all(logs[t].reach() >= spec.rows - 1 for t in source.tables):
            run.check()
            if time.monotonic() > deadline + spec.drain_s:
                raise SystemExit(f"the database's mirrors were not built; see {run.log}")
            time.sleep(1)
        skip = set(producer.produced_at)
        sampler.start()
        print(f"  {spec.rate:g} events/s for {spec.seconds:g} s ...", flush=True)
        start = time.time()
        invoices = threading.Thread(target=producer.run, args=(1, spec.rate / 2, spec.seconds), daemon=True)
        invoices.start()
        changes_from = len(source.changes)
        source.stream(spec.rate / 2, spec.seconds,
                      wide.table_chooser(spec.tables, "uniform", random.Random(spec.seed + 1)))
        invoices.join()
        end = time.time()
        # Drain: every output and every change in its mirror, or --drain passes.
        last = {}
        for c in source.changes[changes_from:]:
            last[c.table] = max(last.get(c.table, -1), c.offset)
        deadline = time.monotonic() + spec.drain_s
        while time.monotonic() < deadline:
            run.check()
            if all(sig in consumer.arrived for sig in producer.produced_at) \
                    and all(logs[source.tables[t]].reach() >= o for t, o in last.items()) \
                    and invoice_log.reach() >= len(producer.invoice_times) - 1:
                break
            time.sleep(1)
        report["drained_after_s"] = round(time.time() - end, 1)
    finally:
        try:
            if sampler.is_alive():
                sampler.stop()
            consumer.stop()
        finally:  # never leave the service running
            report["memory_peak"] = run.stop()
    lines = run.lines()
    output = [(producer.produced_at[s], consumer.arrived.get(s)) for s in producer.produced_at if s not in skip]
    see_invoice = visibility(invoice_log.commits())
    mirror = [(t, see_invoice(offset)) for offset, t in enumerate(producer.invoice_times) if t >= start]
    seen = {t: visibility(logs[t].commits()) for t in source.tables}
    mirror += [(c.produced, seen[source.tables[c.table]](c.offset)) for c in source.changes[changes_from:]]
    events = [t for t in producer.event_times if t >= start] + [c.produced for c in source.changes[changes_from:]]
    cycles = [line for line in lines if line.get("stage") == "cycle"]
    report.update({
        "events": len(events), "outputs_missing": sum(1 for _, v in output if v is None),
        "mirror_missing": sum(1 for _, v in mirror if v is None), "duplicates": consumer.duplicates,
        "errors": sum(1 for line in lines if "error" in line),
        "overall": {"output": percentiles([v - p for p, v in output if v is not None]),
                    "mirror": percentiles([v - p for p, v in mirror if v is not None])},
        "windows": windows(start, end, spec.window_s, output, mirror, sampler.samples, cycles, events),
        "samples": [{"at": round(s.at - start, 1), "python_mb": round(s.python_mb, 1), "jvm_mb": round(s.jvm_mb, 1),
                     "heap_after_gc_mb": s.heap_after_gc_mb and round(s.heap_after_gc_mb, 1),
                     "live_files": s.live_files, "disk_files": s.disk_files, "disk_bytes": s.disk_bytes,
                     "busy_cycles": s.busy_cycles} for s in sampler.samples],
    })
    report["targets"] = verdicts(report)
    return report


# ---------------------------------------------------------------------------
# Report


def print_report(report: dict) -> None:
    head = ("window", "events", "out p50", "out p99", "mir p50", "mir p99", "py MB", "jvm MB", "heap MB",
            "files/t", "disk f", "disk MB", "cycles")
    print("\n" + " | ".join(f"{h:>7}" for h in head))
    for w in report["windows"]:
        cells = (f"{w['from_s'] // 60:.0f}-{w['to_s'] / 60:.0f}m", w["events"], w["output"]["p50_s"],
                 w["output"]["p99_s"], w["mirror"]["p50_s"], w["mirror"]["p99_s"], w["python_rss_mb"],
                 w["jvm_rss_mb"], w["heap_after_gc_mb"], w["files_per_table_max"], w["disk_files_max"],
                 w["disk_mb"], w["cycles"])
        print(" | ".join(f"{'-' if c is None else c!s:>7}" for c in cells))
    print(f"\nfirst output after start: {report.get('first_output_after_start_s')} s (loaded after "
          f"{report.get('ready_s')} s; produce -> output {report.get('first_output_after_produce_s')} s); "
          f"overall {report['overall']}; missing: {report['outputs_missing']} outputs, "
          f"{report['mirror_missing']} mirror changes; duplicates {report['duplicates']}; errors {report['errors']}")
    for name, ok in report["targets"].items():
        print(f"{'-' if ok is None else 'PASS' if ok else 'FAIL'}  {name}")


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = report["windows"]
    mid = [(w["from_s"] + w["to_s"]) / 120 for w in ws]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    ax = axes[0][0]
    for what, style in (("output", "-"), ("mirror", "--")):
        for q in ("p50_s", "p99_s"):
            ax.plot(mid, [w[what][q] for w in ws], style, marker="o", label=f"{what} {q[:3]}")
    ax.set(title="produce -> visible (s)", xlabel="minutes", ylim=(0, None))
    ax.legend()
    ax = axes[0][1]
    samples = report["samples"]
    t = [s["at"] / 60 for s in samples]
    ax.plot(t, [s["python_mb"] for s in samples], label="zync run (Python) RSS")
    ax.plot(t, [s["jvm_mb"] for s in samples], label="Spark JVM RSS")
    ax.plot(t, [s["heap_after_gc_mb"] for s in samples], label="JVM heap after GC")
    ax.set(title="memory (MB)", xlabel="minutes", ylim=(0, None))
    ax.legend()
    ax = axes[1][0]
    ax.plot(t, [max(s["live_files"].values(), default=0) for s in samples], label="files per table, max (live)")
    ax.plot(t, [max(s["disk_files"].values(), default=0) for s in samples], label="files per table, max (on disk)")
    ax.set(title="data files", xlabel="minutes", ylim=(0, None))
    ax.legend()
    ax = axes[1][1]
    ax.plot(t, [s["disk_bytes"] / 2 ** 20 for s in samples], label="project's tables on disk (MB)")
    ax.set(title="disk (MB)", xlabel="minutes", ylim=(0, None))
    ax.legend()
    fig.suptitle(f"{report['command']}: {report['date']}, {report['machine']['cores']} cores, "
                 f"{report['machine']['memory_gb']} GB")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--hours", type=float, default=1.0, help="how long to produce (default 1)")
    length.add_argument("--minutes", type=float, help="how long to produce, in minutes (a short run)")
    parser.add_argument("--rate", type=float, default=100.0, help="events per second, all topics (default 100)")
    parser.add_argument("--window", type=float, default=300.0, help="seconds per reported window (default 300)")
    parser.add_argument("--tables", type=int, default=4, help="tables of the whole-database shape (default 4)")
    parser.add_argument("--rows", type=int, default=200, help="snapshot rows per table (default 200)")
    parser.add_argument("--sample", type=float, help="seconds between memory and disk samples (default window/10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="leave the benchmark's services running")
    parser.add_argument("--no-plot", action="store_true", help="JSON only (no matplotlib needed)")
    args = parser.parse_args()
    if not args.no_plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise SystemExit("the plot needs matplotlib: `make bench-deps` (or pass --no-plot)") from None
    os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local", "ZYNC_PROJECT_DIR": str(ROOT),
                       "ZYNC_DEMO": "true"})
    from zync.config import load_target

    seconds = args.minutes * 60 if args.minutes is not None else args.hours * 3600
    command = " ".join(["bench/soak.py", *sys.argv[1:]])
    date = dt.datetime.now(dt.timezone.utc)
    if STATE.exists():
        wide.zync("down", "--purge", cwd=ROOT)
        shutil.rmtree(STATE, ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)
    up = wide.zync("up", cwd=ROOT)
    if up.returncode != 0:
        raise SystemExit(f"zync up failed:\n{up.stdout}{up.stderr}")
    try:
        spec = Soak(STATE / "projects", seconds, args.rate, args.window, args.tables, args.rows, args.seed,
                    args.sample or max(5.0, args.window / 10))
        report = soak(load_target(None), spec)
    finally:
        if not args.keep:
            wide.zync("down", cwd=ROOT)
    report = {"command": command, "date": date.isoformat(timespec="seconds"), "machine": wide.machine(), **report}
    print(f"\n{command}\n{date:%Y-%m-%d %H:%M} UTC, {report['machine']}")
    print_report(report)
    stem = OUT / f"soak-{date:%Y-%m-%dT%H%M}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2))
    print(f"JSON: {stem.with_suffix('.json')}")
    if not args.no_plot:
        plot(report, stem.with_suffix(".png"))
        print(f"plot: {stem.with_suffix('.png')}")


if __name__ == "__main__":
    main()
