"""Benchmark: how soon `zync run` publishes the first change after a start, with and without its warm-up.

    .venv/bin/python bench/first_output.py [--rounds 2]

One command, alone on the machine (its own state folder and ports; it starts
and stops its own Kafka, registry and catalog). A supervisor restarts the
service after every crash and deploy; what a restart costs is how long the
first change then waits. For each round, in turn with the warm-up (the
default) and with `--no-warm-up`, on a new invoices project (its transform and
mirror):
- fresh: `zync run` starts on empty topics; once it says it is ready, one
  invoice round is produced: seconds from that produce to the last of its
  output records (and from the process's start);
- warm, the anchor: a second round on the same run, the engine warm;
- restart: the run is stopped (SIGTERM) and started again on the same tables;
  once ready, a third round.
Printed: each run, then the median per design. JSON in bench/out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "bench" / "out"
STATE = ROOT / ".local" / "bench-first-output-state"
PORTS = {"ZYNC_KAFKA_PORT": "24992", "ZYNC_REGISTRY_PORT": "24981", "ZYNC_CATALOG_PORT": "25327"}
DESIGNS = {"warm-up": (), "no warm-up": ("--no-warm-up",)}
TIMEOUT_S = 600.0

# bench/latency.py points the environment at its own services when imported: this benchmark keeps its own.
_environment = dict(os.environ)
from bench import latency, wide  # noqa: E402
os.environ.clear()
os.environ.update(_environment)


def published_after(run: wide.ZyncRun, producer: latency.Producer, consumer: latency.Consumer, n: int) -> float:
    """Produce invoice round n; seconds from the produce to the last of its output records."""
    events = latency.invoice_round(n)
    produced = time.time()
    for event in events:
        producer.produce(event)
    producer.producer.flush(30)
    expected = [e.expect for e in events if e.expect is not None]
    deadline = time.monotonic() + TIMEOUT_S
    while not all(sig in consumer.arrived for sig in expected):
        run.check()
        if time.monotonic() > deadline:
            raise SystemExit(f"invoice round {n} did not reach the output in {TIMEOUT_S:.0f} s; see {run.log}")
        time.sleep(0.05)
    return max(consumer.arrived[sig] for sig in expected) - produced


def one_round(target, folder: Path, n: int, design: str, options: tuple[str, ...]) -> dict:
    from testkit.invoices import invoices_project

    # Topics of its own per round and design: the consumer reads the output topic from its start.
    project = invoices_project(folder, f"First{n}" + "".join(w.title() for w in design.split()).replace("-", ""))
    producer = latency.Producer(target, project)
    consumer = latency.Consumer(target, project.output_topic)
    consumer.start()
    result: dict = {"design": design}
    try:
        run = wide.ZyncRun(project.path, folder / "zync-run-1.log", options=options)
        try:
            result["fresh_ready_s"] = round(run.wait_ready(TIMEOUT_S), 1)
            started = run.started
            result["fresh_s"] = round(published_after(run, producer, consumer, 0), 2)
            result["fresh_from_start_s"] = round(max(consumer.arrived.values()) - started, 1)
            result["warm_s"] = round(published_after(run, producer, consumer, 1), 2)
        finally:
            run.stop()
        run = wide.ZyncRun(project.path, folder / "zync-run-2.log", options=options)
        try:
            result["restart_ready_s"] = round(run.wait_ready(TIMEOUT_S), 1)
            result["restart_s"] = round(published_after(run, producer, consumer, 2), 2)
        finally:
            run.stop()
    finally:
        consumer.stop()
    return result


FIGURES = ("fresh_ready_s", "fresh_s", "fresh_from_start_s", "warm_s", "restart_ready_s", "restart_s")


def print_report(runs: list[dict]) -> None:
    print("design      | " + " | ".join(f"{f[:-2]:>17}" for f in FIGURES))
    for run in runs:
        print(f"{run['design']:<11} | " + " | ".join(f"{run[f]:>17}" for f in FIGURES))
    for design in DESIGNS:
        mine = [r for r in runs if r["design"] == design]
        print(f"{design + ' p50':<11} | " + " | ".join(
            f"{statistics.median(r[f] for r in mine):>17.1f}" for f in FIGURES))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="rounds, each design once per round (default 2)")
    args = parser.parse_args()
    os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local", "ZYNC_PROJECT_DIR": str(ROOT)})
    from zync.config import load_target

    command = " ".join(["bench/first_output.py", *sys.argv[1:]])
    date = dt.datetime.now(dt.timezone.utc)
    if STATE.exists():
        wide.zync("down", "--purge", cwd=ROOT)
        shutil.rmtree(STATE, ignore_errors=True)
    up = wide.zync("up", cwd=ROOT)
    if up.returncode != 0:
        raise SystemExit(f"zync up failed:\n{up.stdout}{up.stderr}")
    runs = []
    try:
        target = load_target(None)
        for n in range(args.rounds):
            for design, options in DESIGNS.items():  # alternating, so that drift hits both alike
                runs.append(one_round(target, STATE / "projects", n, design, options))
                print(json.dumps(runs[-1]), flush=True)
    finally:
        wide.zync("down", cwd=ROOT)
    report = {"command": command, "date": date.isoformat(timespec="seconds"), "machine": wide.machine(), "runs": runs}
    print(f"\n{command}\n{date:%Y-%m-%d %H:%M} UTC, {report['machine']}")
    print_report(runs)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"first-output-{date:%Y-%m-%dT%H%M}.json"
    path.write_text(json.dumps(report, indent=2))
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
