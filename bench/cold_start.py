"""Benchmark: how long a new Spark driver takes to its first answers, with and without the class-data archive.

    .venv/bin/python bench/cold_start.py [--rounds 4]

One command, alone on the machine (its own state folder and ports; it starts
and stops its own Kafka, registry and catalog). Every zync verb, every
hand-run `dbt` command and every `zync run` start pays a new driver JVM. For
each round, in turn with the archive (`make setup`'s
.local/jsa/spark-driver.jsa, stack/class_archive.py) and without it (moved
aside for the run, then put back): a new process starts a driver with the
`local` target's settings as zync's jobs do, and times its session, its
first catalog statement and its first read of a Delta table; then a cold
`dbt run` of a one-line view model, as an analyst types it. Printed per
design: each run and the median. JSON in bench/out/cold_start.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
STATE = ROOT / ".local" / "bench-cold-state"
PORTS = {"ZYNC_KAFKA_PORT": "24692", "ZYNC_REGISTRY_PORT": "24681", "ZYNC_CATALOG_PORT": "25027"}
os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local"})
OUT = ROOT / "bench" / "out"

from testkit.invoices import invoices_project  # noqa: E402
from stack.class_archive import ARCHIVE  # noqa: E402

# Run in a new process: a driver started the way zync's jobs start theirs, each step timed.
DRIVER = """
import json, sys, time
started = time.perf_counter()
from zync.config import load_target
from zync.spark import spark_session
spark = spark_session(load_target("local"))
session = time.perf_counter()
spark.sql("show databases").collect()
catalog = time.perf_counter()
spark.sql("select count(*) from zync.cold_raw where kafka.offset >= 0").collect()
read = time.perf_counter()
print(json.dumps({"session": session - started, "first catalog statement": catalog - session,
                  "first Delta read": read - catalog, "driver total": read - started}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of both designs, alternating (default 4)")
    args = parser.parse_args()

    from stack import services
    from zync.config import load_target

    archive = ROOT / ARCHIVE
    if not archive.is_file():
        raise SystemExit(f"no class-data archive at {archive}: run `make setup` first")
    aside = archive.with_name(archive.name + ".bench-aside")
    target = load_target("local")
    services.down(target)
    shutil.rmtree(STATE, ignore_errors=True)
    services.up(target)
    runs: dict[str, list[dict[str, float]]] = {"archive": [], "none": []}
    try:
        project = invoices_project(STATE / "projects", "Cold")
        (project.path / "models" / "cold").mkdir(parents=True)
        (project.path / "models" / "cold" / "cold_view.sql").write_text(
            "{{ config(materialized='view') }}\nselect 1 as one\n")
        setup = ("from zync.config import load_target\nfrom zync.spark import spark_session\n"
                 "spark = spark_session(load_target('local'))\nspark.sql('create database if not exists zync')\n"
                 "spark.sql('create table if not exists zync.cold_raw (kafka struct<topic: string, partition: int, "
                 "offset: bigint>, value string) using delta')\n")
        subprocess.run([sys.executable, "-c", setup], cwd=project.path, check=True, capture_output=True)
        dbt = [str(Path(sys.executable).parent / "dbt"), "run", "--select", "cold_view", "--project-dir",
               str(project.path), "--profiles-dir", str(project.path / "profiles"), "--target", "local"]
        for round_no in range(1, args.rounds + 1):
            for design in ("archive", "none"):
                if design == "none":
                    archive.replace(aside)
                try:
                    done = subprocess.run([sys.executable, "-c", DRIVER], cwd=project.path, check=True,
                                          capture_output=True, text=True)
                    figures = json.loads(done.stdout.strip().splitlines()[-1])
                    started = time.perf_counter()
                    subprocess.run(dbt, cwd=project.path, check=True, stdout=subprocess.DEVNULL)
                    figures["cold dbt run of a view"] = time.perf_counter() - started
                finally:
                    if design == "none":
                        aside.replace(archive)
                runs[design].append(figures)
                print(f"round {round_no} {design:>7}: " + ", ".join(f"{k} {v:.2f} s" for k, v in figures.items()),
                      flush=True)
    finally:
        if aside.exists() and not archive.exists():
            aside.replace(archive)
        services.down(target)

    print(f"\n{'median, seconds':<28}" + "".join(f"{d:>10}" for d in runs))
    for step in runs["archive"][0]:
        print(f"{step:<28}" + "".join(f"{statistics.median(r[step] for r in runs[d]):10.2f}" for d in runs))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cold_start.json").write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
