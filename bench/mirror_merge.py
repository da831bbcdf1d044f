"""Benchmark: one incremental mirror run vs rebuilding the mirror from the whole raw history.

    .venv/bin/python bench/mirror_merge.py [--rows 1000000] [--changes 100000]

Builds, with Spark, a raw Debezium table in the shape `zync from-kafka` writes:
ROWS snapshot reads (op r), then CHANGES more records (70% updates of existing
keys, 20% inserts of new keys, 10% deletes) in a mixed order. A scratch dbt
project holds two copies of the same hard-delete mirror:
- bench_mirror: built from the snapshot, then timed: ONE incremental `dbt run`
  applying the CHANGES (cursor filter + last-change-per-key + one Delta MERGE);
- bench_mirror_rebuild (the anchor): the same model, timed `dbt run
  --full-refresh`: the mirror recomputed from all ROWS + CHANGES raw records
  (CREATE OR REPLACE TABLE AS the last change per key; of zync's cursor
  bookkeeping only the raw offsets' read before it).
Asserts the two tables hold identical rows, prints both timings and the ratio
(target: incremental >= 5x faster), and writes bench/out/mirror_merge.json.
Runs on its own state folder (bench/out/state) and catalog (port $BENCH_CATALOG_PORT, default 26527).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
os.environ.setdefault("ZYNC_STATE_DIR", str(OUT / "state"))
os.environ.setdefault("ZYNC_TARGET", "local")
os.environ.setdefault("ZYNC_CATALOG_PORT", os.environ.get("BENCH_CATALOG_PORT", "26527"))
os.environ["ZYNC_PROJECT_DIR"] = str(ROOT)
sys.path.insert(0, str(ROOT))


TOPIC = "BenchAccounts"
RAW = "bench_raw_accounts"
MIRRORS = f"""\
mirrors:
  - model: bench_mirror
    topic: {TOPIC}
    table: {RAW}
  - model: bench_mirror_rebuild
    topic: {TOPIC}
    table: {RAW}
"""
AFTER_TYPE = "struct<ID:bigint,name:string,balance:bigint,city:string>"
# Bijections of 0..n-1 (multipliers coprime with n) spread keys and offsets without a shuffle.
KEY_STEP, OFFSET_STEP = 7919, 48271


def raw_rows(spark, ids_sql: str, op_sql: str, key_sql: str, offset_sql: str, after_sql: str, before_sql: str):
    return spark.sql(f"""
        select
            named_struct('topic', '{TOPIC}', 'partition', 0, 'offset', {offset_sql},
                         'timestamp', timestamp_millis(1700000000000 + {offset_sql}),
                         'key_schema_id', 1, 'value_schema_id', 2) as kafka,
            named_struct('ID', {key_sql}) as key,
            named_struct('before', {before_sql}, 'after', {after_sql}, 'op', {op_sql},
                         'ts_ms', 1700000000000 + {offset_sql}) as value
        from {ids_sql}
    """)


IMAGE = "named_struct('ID', {k}, 'name', concat('{p}', {k}), 'balance', ({k} * 37 + {s}) % 10000, 'city', concat('city-', {k} % 97))"


def write_snapshot(spark, rows: int) -> None:
    """ROWS snapshot reads, offsets 0..ROWS-1, in 8 files ordered by offset (as ingest batches would be)."""
    spark.sql("create schema if not exists zync")
    spark.sql(f"drop table if exists zync.{RAW}")
    snapshot = raw_rows(spark, f"range(0, {rows}, 1, 8)", "'r'", "id", "id",
                        IMAGE.format(k="id", p="name-", s=0), f"cast(null as {AFTER_TYPE})")
    snapshot.write.format("delta").saveAsTable(f"zync.{RAW}")


def append_changes(spark, rows: int, changes: int) -> dict[str, int]:
    """CHANGES records after the snapshot: 70% updates, 10% deletes (distinct existing keys), 20% inserts."""
    image = IMAGE
    updates, inserts = int(changes * 0.7), int(changes * 0.2)
    deletes = changes - updates - inserts
    key = f"(id * {KEY_STEP} + 13) % {rows}"  # distinct existing keys for updates and deletes
    offset = f"{rows} + (id * {OFFSET_STEP}) % {changes}"
    change_sql = f"""
        case when id < {updates} then 'u' when id < {updates + deletes} then 'd' else 'c' end
    """
    key_sql = f"case when id < {updates + deletes} then {key} else {rows} + id end"
    after = f"case when id < {updates} or id >= {updates + deletes} then {image.format(k=key_sql, p='changed-', s=1)} end"
    before = f"case when id < {updates + deletes} then {image.format(k=key_sql, p='name-', s=0)} end"
    batch = raw_rows(spark, f"range(0, {changes}, 1, 2)", change_sql, key_sql, offset, after, before)
    batch.write.format("delta").mode("append").saveAsTable(f"zync.{RAW}")
    return {"updates": updates, "inserts": inserts, "deletes": deletes}


def scratch_project() -> Path:
    from tests.support.scratch import make_scratch_project

    # The model's select is the raw changes as the mirror's columns; a plain `table` of it is no mirror, so
    # the anchor is the same zync_mirror model rebuilt (--full-refresh).
    return make_scratch_project(OUT / "project", {"bench_mirrors.yml": MIRRORS}).path


def dbt(project: Path, *args: str) -> float:
    from dbt.cli.main import dbtRunner

    os.chdir(project)
    started = time.perf_counter()
    result = dbtRunner().invoke([*args, "--quiet", "--project-dir", str(project), "--profiles-dir", str(ROOT / "profiles")])
    elapsed = time.perf_counter() - started
    if not result.success:
        raise SystemExit(f"dbt {' '.join(args)} failed: {result.exception or result.result}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2, help="measure each side this many times, alternating")
    args = parser.parse_args()

    from zync import services
    from zync.config import load_target
    from zync.spark import spark_session

    OUT.mkdir(parents=True, exist_ok=True)
    target = load_target("local")
    services.up(target, only={"catalog"})  # its own catalog, on its own port
    atexit.register(services.down, target, ["catalog"])
    spark = spark_session(target)
    for table in ("bench_mirror", "bench_mirror_rebuild"):
        spark.sql(f"drop table if exists zync.{table}")
    project = scratch_project()

    started = time.perf_counter()
    write_snapshot(spark, args.rows)
    setup_seconds = time.perf_counter() - started
    initial_seconds = dbt(project, "run", "--select", "bench_mirror")  # first run: built from the snapshot
    mix = append_changes(spark, args.rows, args.changes)

    # The machine is shared: alternate the two measurements and keep each one's best.
    start_version = spark.sql("describe history zync.bench_mirror").agg({"version": "max"}).first()[0]
    incremental_runs, rebuild_runs, loads = [], [], []
    for attempt in range(args.repeat):
        if attempt:
            spark.sql(f"restore table zync.bench_mirror to version as of {start_version}")
        loads.append(round(os.getloadavg()[0], 1))
        incremental_runs.append(dbt(project, "run", "--select", "bench_mirror"))
        merge = spark.sql("describe history zync.bench_mirror").orderBy("version", ascending=False).first()
        loads.append(round(os.getloadavg()[0], 1))
        rebuild_runs.append(dbt(project, "run", "--select", "bench_mirror_rebuild", "--full-refresh"))
    incremental_seconds, rebuild_seconds = min(incremental_runs), min(rebuild_runs)

    columns = ", ".join(f"`{c}`" for c in spark.table("zync.bench_mirror_rebuild").columns)
    only_incremental = spark.sql(f"select {columns} from zync.bench_mirror except all select {columns} from zync.bench_mirror_rebuild").count()
    only_rebuild = spark.sql(f"select {columns} from zync.bench_mirror_rebuild except all select {columns} from zync.bench_mirror").count()
    mirror_rows = spark.table("zync.bench_mirror").count()
    expected_rows = args.rows + mix["inserts"] - mix["deletes"]
    assert only_incremental == 0 and only_rebuild == 0, f"contents differ: {only_incremental} / {only_rebuild} rows"
    assert mirror_rows == expected_rows, f"{mirror_rows} rows, expected {expected_rows}"

    figures = {
        "rows": args.rows, "changes": args.changes, **mix,
        "mirror_rows_after": mirror_rows,
        "merge_metrics": {k: merge["operationMetrics"].get(k) for k in (
            "numSourceRows", "numTargetRowsUpdated", "numTargetRowsInserted", "numTargetRowsDeleted",
            "numTargetFilesAdded", "numTargetFilesRemoved", "numTargetDeletionVectorsAdded")},
        "setup_seconds": round(setup_seconds, 1),
        "initial_build_seconds": round(initial_seconds, 1),
        "incremental_run_seconds": round(incremental_seconds, 1),
        "rebuild_seconds": round(rebuild_seconds, 1),
        "incremental_runs_seconds": [round(x, 1) for x in incremental_runs],
        "rebuild_runs_seconds": [round(x, 1) for x in rebuild_runs],
        "load_average_before_each": loads,
        "speedup": round(rebuild_seconds / incremental_seconds, 1),
        "identical_contents": True,
        "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end "
                   "(shared with other jobs while measured)",
    }
    (OUT / "mirror_merge.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"mirror of {args.rows:,} rows, {args.changes:,} changes "
          f"({mix['updates']:,} updates, {mix['inserts']:,} inserts, {mix['deletes']:,} deletes)")
    print(f"  MERGE applied: {figures['merge_metrics']}")
    print(f"  incremental dbt run : {incremental_seconds:7.1f} s (best of {figures['incremental_runs_seconds']})")
    print(f"  anchor: rebuild from the whole raw history (dbt run --full-refresh): {rebuild_seconds:7.1f} s "
          f"(best of {figures['rebuild_runs_seconds']})")
    print(f"  load average before each measurement: {loads}")
    print(f"  speedup: {figures['speedup']}x (target >= 5x); contents identical ({mirror_rows:,} rows)")
    print(f"  machine: {figures['machine']}")
    spark.stop()


if __name__ == "__main__":
    main()
