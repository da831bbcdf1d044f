"""What a `zync run` cycle pays for a burst of changes to many mirrors: merge-on-read against a table per mirror.

    .venv/bin/python bench/mirror_burst.py [--tables 12] [--changes 30] [--trials 3] [--keep]

One command, alone on the machine (its own state folder and ports). Two
projects of --tables Debezium-shaped topics (key {id}, value {before, after,
op, ts_ms}) with a mirror each, in one in-process `zync run` engine:
- `mor`: this checkout's mirrors (merge-on-read: the mirror's name is a view
  of its base and the raw changes past the base's cursor; zync run folds
  only when due, service/folds.py, its defaults);
- `table`: the mirrors of --table-macros, a git revision from before
  merge-on-read (default: the parent of the commit that added the view's
  macro), whose mirror is a Delta table that only a `dbt run` moves: the
  service runs every mirror whose raw table moved, each cycle.
Each is built from a snapshot of --rows rows per table (`zync run --once`).
Then, per trial, alternating which design goes first: a burst of --changes
updates, deletes and creates to every table, produced and flushed, then
cycles of that design's service until every mirror, queried by its name,
shows the burst's last change. Reported per run: seconds from the last
produce to the end of the cycle that made the burst visible (the checks'
own queries left out), the cycles it took, the mirrors' dbt runs in them.
Last, the `mor` project's deferred cost: one `--once` cycle folding every
mirror. Compaction is off in both (--compact-after 0), to time the mirrors alone.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tarfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
STATE = ROOT / ".local" / "bench-mirror-burst-state"
PORTS = {"ZYNC_KAFKA_PORT": "24492", "ZYNC_REGISTRY_PORT": "24481", "ZYNC_CATALOG_PORT": "24827"}
os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local"})
OUT = ROOT / "bench" / "out" / "mirror_burst"
VIEW_MACRO = "macros/mirror/view/zync_mirror_view_sql.sql"

KEY_SCHEMA = {"type": "record", "name": "Key", "namespace": "burst", "fields": [{"name": "id", "type": "int"}]}
VALUE_SCHEMA = {"type": "record", "name": "Envelope", "namespace": "burst", "fields": [
    {"name": "before", "type": ["null", {"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "qty", "type": ["null", "int"], "default": None}]}], "default": None},
    {"name": "after", "type": ["null", "Value"], "default": None},
    {"name": "op", "type": "string"},
    {"name": "ts_ms", "type": ["null", "long"], "default": None},
]}


def table_macros_revision() -> str:
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", VIEW_MACRO], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    if not added:
        raise SystemExit(f"no commit adds {VIEW_MACRO}: give --table-macros")
    return added[-1] + "^"


def make_project(design: str, tables: int, macros_revision: str | None):
    from testkit.scratch import make_scratch_project

    entries = "".join(f"  - model: {design}_mirror_{i}\n    topic: {design}_t{i}\n    table: {design}_raw_{i}\n"
                      for i in range(tables))
    project = make_scratch_project(OUT / design, {"mirrors.yml": "mirrors:\n" + entries})
    for linked in ("profiles", ".local", "jvm"):  # what `zync run` in a project folder reads besides dbt's files
        (project.path / linked).symlink_to(ROOT / linked, target_is_directory=True)
    if macros_revision:  # the mirrors' machinery as it was at that revision
        (project.path / "macros").unlink()
        archive = subprocess.run(["git", "archive", macros_revision, "macros"], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(project.path, filter="data")
    return project


def value(op: str, key: int, name: str | None, qty: int | None, ts: int) -> dict:
    row = None if op == "d" else {"id": key, "name": name, "qty": qty}
    before = {"id": key, "name": None, "qty": None} if op in ("u", "d") else None
    return {"before": before, "after": row, "op": op, "ts_ms": ts}


def produce(target, topic: str, records: list[dict]) -> None:
    from zync import topics

    topics.produce(target, topic, records, OUT / "key.avsc", OUT / "value.avsc")


def burst(target, design: str, tables: int, changes: int, rows: int, marker: int, rng: random.Random) -> None:
    """--changes changes to every table, the last an update of key 0 to qty = marker."""
    ts = int(time.time() * 1000)
    for i in range(tables):
        records = []
        for n in range(changes - 1):
            key = rng.randrange(1, rows + changes)
            op = rng.choice("uuuuuuudc")
            records.append({"key": {"id": key}, "value": value(op, key, f"n{marker}-{n}", n, ts + n)})
        records.append({"key": {"id": 0}, "value": value("u", 0, "marker", marker, ts + changes)})
        produce(target, f"{design}_t{i}", records)


def visible(spark, design: str, tables: int, marker: int) -> bool:
    for i in range(tables):
        row = spark.sql(f"select qty from zync.{design}_mirror_{i} where id = 0").first()
        if row is None or row[0] != marker:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=12)
    parser.add_argument("--changes", type=int, default=30, help="changes per table in a burst")
    parser.add_argument("--rows", type=int, default=200, help="rows per table in the snapshot")
    parser.add_argument("--trials", type=int, default=3, help="bursts per design, alternating")
    parser.add_argument("--table-macros", metavar="REV", help="git revision of the table-per-mirror machinery")
    parser.add_argument("--keep", action="store_true", help="keep the services and state afterwards")
    args = parser.parse_args()

    from service.run import Service
    from stack import services
    from zync.config import load_target
    from zync.progress import Progress
    from zync.spark import spark_session

    revision = args.table_macros or table_macros_revision()
    target = load_target("local")
    services.down(target)
    shutil.rmtree(STATE, ignore_errors=True)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    (OUT / "key.avsc").write_text(json.dumps(KEY_SCHEMA))
    (OUT / "value.avsc").write_text(json.dumps(VALUE_SCHEMA))
    services.up(target)
    runs = []
    try:
        spark = spark_session(target)
        spark.sql("create schema if not exists zync")
        projects = {"mor": make_project("mor", args.tables, None), "table": make_project("table", args.tables, revision)}
        quiet = lambda: Progress.for_run(open(os.devnull, "w"), live=False)  # noqa: E731
        service = {
            "mor": Service(target, root=projects["mor"].path, status=quiet(), compact_after=0),
            # every mirror whose raw table moved runs, each cycle: what a mirror stored as a table needs
            "table": Service(target, root=projects["table"].path, status=quiet(), compact_after=0,
                             fold_after_commits=1, folds_per_cycle=0),
        }
        for design in ("mor", "table"):
            for i in range(args.tables):
                produce(target, f"{design}_t{i}", [{"key": {"id": k}, "value": value("r", k, f"n{k}", k, 1)}
                                                  for k in range(args.rows)])
            started = time.monotonic()
            service[design].run(once=True)
            print(f"{design}: built {args.tables} mirrors of {args.rows} rows in {time.monotonic() - started:.1f} s",
                  flush=True)
        rng = random.Random(7)
        for trial in range(args.trials):
            for design in (("mor", "table") if trial % 2 == 0 else ("table", "mor")):
                marker = 1000 + trial
                burst(target, design, args.tables, args.changes, args.rows, marker, rng)
                produced = time.monotonic()
                checking, cycles, mirror_runs = 0.0, 0, 0
                while True:
                    reports = service[design].cycle()
                    cycles += 1
                    ended = time.monotonic()
                    mirror_runs += sum(len(r.detail["models"]) for r in reports if r.stage == "dbt")
                    if visible(spark, design, args.tables, marker):
                        break
                    checking += time.monotonic() - ended  # the checks between cycles are not the service's time
                    if cycles > 20:
                        raise SystemExit(f"{design}: the burst is not visible after 20 cycles")
                seconds = ended - produced - checking
                run = {"design": design, "trial": trial + 1, "seconds": round(seconds, 2), "cycles": cycles,
                       "mirror_runs": mirror_runs}
                runs.append(run)
                print(json.dumps(run), flush=True)
        started = time.monotonic()
        service["mor"].run(once=True)
        fold = round(time.monotonic() - started, 2)
        print(json.dumps({"design": "mor", "fold_all_once_seconds": fold, "mirrors": args.tables}), flush=True)
        for s in service.values():
            s.close()
    finally:
        if not args.keep:
            services.down(target)
    result = {"command": " ".join(["bench/mirror_burst.py", *sys.argv[1:]]),
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": platform.node(),
              "cpus": os.cpu_count(), "tables": args.tables, "changes": args.changes, "rows": args.rows,
              "table_macros": revision, "runs": runs, "mor_fold_all_seconds": fold}
    (OUT / "result.json").write_text(json.dumps(result, indent=1))
    print(f"\n{'design':<7}| trial | seconds | cycles | mirror runs")
    for r in runs:
        print(f"{r['design']:<7}| {r['trial']:>5} | {r['seconds']:>7} | {r['cycles']:>6} | {r['mirror_runs']:>11}")
    print(f"mor: folding all {args.tables} mirrors afterwards (--once): {fold} s")


if __name__ == "__main__":
    main()
