"""How one incremental `dbt run` grows with the history behind it: cursor vs brute force.

    .venv/bin/python bench/etl_history.py [--sizes 10000,100000,1000000,10000000] [--backfill N] [--new-events 1000]
        [--target cluster] [--repeat N]

For each size N it builds, synthetically with Spark (not via Kafka), two raw
topics of N/2 records each (denorm creates + stateless updates) and an output
table in which every one of them is done, as many earlier runs would have
left it; adds 1,000 new events (--new-events); and times one `dbt run` of
the model, in this process's warm engine as `zync run` runs it. The
anchor, in the same run and on the same tables: the same model with the
cursor disabled (`--vars '{zync_cursor: false}'`), zync's scan-everything
anti-join. Then it times a backfill: N pending records, no output yet, one run.
With --target cluster, each size also times the same run as a user of the
`cluster` target runs it: `dbt run --target cluster`, through the Thrift Server
of a local standalone cluster (`zync up --cluster`: master, one worker, the
Thrift Server as an application on it) over the same tables in the same
catalog, alternating with the warm in-process run --repeat times (default 1),
so the cluster's overhead on one machine is known.
Figures go to bench/out/etl_history.json and the plot to bench/etl_history.png.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "bench" / "out"
STATE = OUT_DIR / "state"
os.environ["ZYNC_PROJECT_DIR"] = str(ROOT)
os.environ["ZYNC_STATE_DIR"] = str(STATE)
os.environ.setdefault("ZYNC_CATALOG_PORT", os.environ.get("BENCH_CATALOG_PORT", "25527"))
os.environ["ZYNC_TARGET"] = "local"
sys.path.insert(0, str(ROOT))

MODEL, RAW_A, RAW_B = "bench_out", "bench_raw_a", "bench_raw_b"
NEW_EVENTS = 1_000
RECORDS_PER_FILE = 50_000  # about what one ingest commit of --batch-size 50000 writes

TRANSFORM = f"""\
inputs:
  - {{topic: benchA, table: {RAW_A}}}
  - {{topic: benchB, table: {RAW_B}}}
output: {{topic: benchOut, model: {MODEL}}}
transforms:
  - type: denorm
    where: value.op = 'c'
    left: benchA
    right: benchB
    join-on: left.value.after.id = right.value.after.ref
    out: benchOut
    key: left.key
    value: {{id: left.value.after.id, name: left.value.after.name, status: right.value.after.name}}
  - type: stateless
    where: value.op = 'u'
    in: benchA
    out: benchOut
    key: in.key
    value: {{id: in.value.after.id, name: in.value.after.name}}
  - type: stateless
    where: value.op = 'u'
    in: benchB
    out: benchOut
    key: {{id: in.value.after.ref}}
    value: {{id: in.value.after.ref, status: in.value.after.name}}
"""


def raw_frame(spark, topic: str, start: int, count: int, first_id: int, side: str):
    """count records from offset start: first half creates (ids first_id..), second half updates."""
    from pyspark.sql import functions as F

    half = count // 2
    o = F.col("id")
    n = o - F.lit(start)
    ident = F.lit(first_id) + F.when(n < half, n).otherwise(n - half)
    op = F.when(n < half, F.lit("c")).otherwise(F.lit("u"))
    key = ident if side == "a" else ident + F.lit(10_000_000_000)
    return spark.range(start, start + count).select(
        F.struct(F.lit(topic).alias("topic"), F.lit(0).alias("partition"), o.alias("offset"),
                 F.timestamp_seconds(F.lit(1_767_225_600) + o).alias("timestamp")).alias("kafka"),
        F.struct(key.alias("id")).alias("key"),
        F.struct(op.alias("op"), F.struct(key.alias("id"), ident.alias("ref"),
                                          F.concat(F.lit(side), ident.cast("string")).alias("name")).alias("after")).alias("value"),
    )


def write(frame, table: str, mode: str, records: int) -> None:
    files = max(1, records // RECORDS_PER_FILE)
    frame.repartitionByRange(files, "kafka.offset").write.format("delta").mode(mode).saveAsTable(f"zync.{table}")


def done_history(spark, size: int):
    """The output table as earlier runs left it: every record done, out rows, cursor rows."""
    from pyspark.sql import functions as F

    half = size // 2
    outs = half // 2 + 2 * (half - half // 2)  # one per pair, one per update
    key_t = "struct<id:bigint>"
    value_t = "struct<id:bigint,name:string,status:string>"

    def rows(kind: str, topic, offsets, status):
        return offsets.select(
            F.struct(F.lit(topic).alias("topic"), F.lit(0).alias("partition"), F.col("id").alias("offset")).alias("kafka"),
            F.lit(kind).alias("kind"),
            (F.struct(F.col("id").alias("id")) if kind == "out" else F.lit(None)).cast(key_t).alias("key"),
            (F.struct(F.col("id").alias("id"), F.lit("x").alias("name"), F.lit("y").alias("status"))
             if kind == "out" else F.lit(None)).cast(value_t).alias("value"),
            (F.array(F.lit("id"), F.lit("name"), F.lit("status")) if kind == "out" else F.lit(None)).cast("array<string>").alias("fields"),
            F.lit(status).cast("string").alias("status"),
            F.lit("history").alias("run_id"),
        )

    frames = [
        rows("out", "benchOut", spark.range(0, outs), None),
        rows("done", "benchA", spark.range(0, half), "processed"),
        rows("done", "benchB", spark.range(0, half), "processed"),
        rows("cursor", "benchA", spark.range(half, half + 1), None),
        rows("cursor", "benchB", spark.range(half, half + 1), None),
        rows("cursor", "benchOut", spark.range(outs, outs + 1), None),
    ]
    frame = frames[0]
    for f in frames[1:]:
        frame = frame.unionByName(f)
    files = max(1, size // RECORDS_PER_FILE)
    (frame.repartitionByRange(files, "kind", "kafka.offset").write.format("delta").partitionBy("kind")
     .mode("overwrite").saveAsTable(f"zync.{MODEL}"))


def timed_run(project, *extra: str) -> float:
    """Seconds of one `dbt run` of the model (in this process; `--target cluster`: through the Thrift Server)."""
    start = time.perf_counter()
    project.dbt("run", "--select", MODEL, *extra)
    return time.perf_counter() - start


def version(spark, table: str) -> int:
    return spark.sql(f"describe history zync.{table} limit 1").collect()[0]["version"]


def count(spark, where: str) -> int:
    return spark.sql(f"select count(*) from zync.{MODEL} where {where}").collect()[0][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000,10000000",
                        help="history sizes in input records, comma-separated")
    parser.add_argument("--backfill", type=int, default=None, help="pending records for the backfill (default: largest size; 0: none)")
    parser.add_argument("--new-events", type=int, default=NEW_EVENTS,
                        help="new events (denorm pairs' halves) before the timed run (default 1000)")
    parser.add_argument("--target", choices=("local", "cluster"), default="local",
                        help="cluster: also time each run through a local standalone cluster's Thrift Server")
    parser.add_argument("--repeat", type=int, default=1,
                        help="timed runs per size and design, alternating (the best is reported; default 1)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backfill = max(sizes) if args.backfill is None else args.backfill

    from testkit.scratch import make_scratch_project
    from stack import services
    from stack.cluster import SERVICE_NAMES
    from zync.config import load_target
    from zync.spark import spark_session

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    target = load_target("local")
    services.down(target, only={"catalog"})
    shutil.rmtree(STATE, ignore_errors=True)
    on_cluster = args.target == "cluster"
    # Its own catalog on its own port (and the local cluster, whose Thrift Server uses that catalog).
    for line in services.up(target, only={"catalog"} | (set(SERVICE_NAMES) if on_cluster else set()), cluster=on_cluster):
        print(line, flush=True)
    atexit.register(services.down, target, ["catalog", *(SERVICE_NAMES if on_cluster else ())])
    spark = spark_session(target)
    spark.sql("create database if not exists zync")
    project = make_scratch_project(Path(tempfile.mkdtemp(prefix="zync-bench-")) / "project", {"bench.yml": TRANSFORM}, spark=spark)
    project.dbt("parse")

    results = {"new_events": args.new_events, "sizes": [], "cursor_s": [], "anchor_s": [], "load": os.getloadavg()[0],
               "repeat": args.repeat, "runs": []}
    if on_cluster:
        results["cluster_s"] = []
    for size in sizes:
        half = size // 2
        for table in (RAW_A, RAW_B, MODEL):
            spark.sql(f"drop table if exists zync.{table}")
        write(raw_frame(spark, "benchA", 0, half, 0, "a"), RAW_A, "overwrite", half)
        write(raw_frame(spark, "benchB", 0, half, 0, "b"), RAW_B, "overwrite", half)
        done_history(spark, size)
        # The new events: pairs (denorm), in one new ingest commit per topic.
        pairs = args.new_events // 2
        new_id = 10 ** 9
        write(raw_frame(spark, "benchA", half, 2 * pairs, new_id, "a").where(f"value.op = 'c'"), RAW_A, "append", 1)
        write(raw_frame(spark, "benchB", half, 2 * pairs, new_id, "b").where(f"value.op = 'c'"), RAW_B, "append", 1)
        before = version(spark, MODEL)
        outs_before = count(spark, "kind = 'out'")
        if size == sizes[0]:
            # The first dbt run in a process pays for warming the JVM (and on the cluster, the Thrift
            # Server's first query of these tables): not a figure of either side.
            timed_run(project)
            spark.sql(f"restore table zync.{MODEL} to version as of {before}")
            if on_cluster:
                timed_run(project, "--target", "cluster")
                spark.sql(f"restore table zync.{MODEL} to version as of {before}")
        designs = {"cursor": (), "anchor": ("--vars", "{zync_cursor: false}")}
        if on_cluster:
            designs["cluster"] = ("--target", "cluster")
        times: dict[str, list[float]] = {name: [] for name in designs}
        for attempt in range(args.repeat):
            for name, extra in designs.items():
                seconds = timed_run(project, *extra)
                emitted = count(spark, "kind = 'out'") - outs_before
                assert emitted == pairs, f"{name}: expected {pairs} new out rows, got {emitted}"
                spark.sql(f"restore table zync.{MODEL} to version as of {before}")
                times[name].append(seconds)
                results["runs"].append({"size": size, "design": name, "attempt": attempt + 1, "seconds": seconds})
                print(f"  history {size:,}, {name}, run {attempt + 1}: {seconds:.2f} s", flush=True)
        cursor_s, anchor_s = min(times["cursor"]), min(times["anchor"])
        print(f"history {size:>10,}: incremental run {cursor_s:6.1f} s with the cursor, "
              f"{anchor_s:6.1f} s without (brute force)"
              + (f", {min(times['cluster']):6.1f} s on the local cluster" if on_cluster else ""), flush=True)
        if on_cluster:
            results["cluster_s"].append(min(times["cluster"]))
        results["sizes"].append(size)
        results["cursor_s"].append(cursor_s)
        results["anchor_s"].append(anchor_s)

    if backfill == 0:
        finish(results)
        return
    for table in (RAW_A, RAW_B, MODEL):
        spark.sql(f"drop table if exists zync.{table}")
    half = backfill // 2
    write(raw_frame(spark, "benchA", 0, half, 0, "a"), RAW_A, "overwrite", half)
    write(raw_frame(spark, "benchB", 0, half, 0, "b"), RAW_B, "overwrite", half)
    backfill_s = timed_run(project)
    done = count(spark, "kind = 'done'")
    results["backfill"] = {"records": 2 * half, "done": done, "seconds": backfill_s, "records_per_s": done / backfill_s}
    print(f"backfill: {done:,} of {2 * half:,} pending records done in one run in {backfill_s:.1f} s "
          f"= {done / backfill_s:,.0f} records/s", flush=True)
    finish(results)


def finish(results: dict) -> None:
    results["load_after"] = os.getloadavg()[0]
    (OUT_DIR / "etl_history.json").write_text(json.dumps(results, indent=2))
    plot(results)


def plot(results: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(results["sizes"], results["cursor_s"], "o-", label="with the cursor")
    ax.plot(results["sizes"], results["anchor_s"], "s--", label="cursor disabled (brute-force anti-join)")
    if results.get("cluster_s"):
        ax.plot(results["sizes"], results["cluster_s"], "^-", label="with the cursor, on the local cluster")
    ax.set_xscale("log")
    ax.set_xlabel("history (input records, all done)")
    ax.set_ylabel(f"one dbt run adding {results['new_events']:,} events (s)")
    ax.set_title("zync ETL: incremental run time vs history size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(ROOT / "bench" / "etl_history.png", dpi=110)


if __name__ == "__main__":
    main()
