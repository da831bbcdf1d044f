"""Benchmark: what a Delta table's long log costs every read and commit, by log store.

    .venv/bin/python bench/log_listing.py [--sizes 1000,4000,16000] [--reps 10]

One command, alone on the machine; no service (tables by path in .local/bench-log-listing).
`zync run` commits to a raw table every cycle it changes, and Delta keeps a table's log files for
delta.logRetentionDuration (30 days): on a local folder four files a commit (the commit, its
checksum, Hadoop's .crc of each). Every read and every commit lists the log from its last
checkpoint on; Delta's own store (HDFSLogStore) asks for the status of every file in the folder to
do so, the project's (zync.delta.NameFirstLogStore, jvm/delta-log-listing) reads the names first.

One table's log folder is grown to each of --sizes files (commits of a commitInfo each, then a
checkpoint: a listing costs by the files in the folder, not by what they hold), and at each size,
the two stores alternating (the order swapped each rep), --reps times each: one listing of the log
from the last checkpoint on (listFrom), one read of the table (a count: Delta's snapshot update
and a Spark job), one append of one row (a DataFrame write: a snapshot update, the commit, its
conflict check). The medians per size and store are printed with the anchor, Delta's own store,
from the same run; JSON in bench/out/log_listing.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from zync.spark_internals import delta_log, jvm_of, latest_snapshot  # noqa: E402
STATE = ROOT / ".local" / "bench-log-listing"
OUT = ROOT / "bench" / "out" / "log_listing.json"
STORES = {"delta (HDFSLogStore)": "io.delta.storage.HDFSLogStore", "name-first": "zync.delta.NameFirstLogStore"}
STORE_KEY = "spark.delta.logStore.file.impl"


def session():
    """A session with the project's Spark settings, but no catalog: the table is read by its path."""
    from pyspark.sql import SparkSession

    from zync.config import load_target

    builder = SparkSession.builder.master("local[2]").appName("bench log listing")
    for key, value in load_target("local").spark_conf.items():
        if not key.startswith("spark.hadoop.javax.jdo"):
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def use_store(spark, class_name: str) -> None:
    """Delta picks a scheme's store from the live SparkConf when a table's log is first opened:
    set it there and drop the cached logs, so the next read opens the table with this store."""
    jvm = jvm_of(spark)
    jvm.org.apache.spark.SparkEnv.get().conf().set(STORE_KEY, class_name)
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()


def grow(spark, location: Path, files: int) -> None:
    """Commits of a commitInfo each, written as files beside the table's own, until its log folder holds
    `files` files; then a checkpoint, as the log's would be. Made through Delta's transaction, each would
    cost a Spark job (the table's protocol and metadata without a checksum); a listing costs by the
    files in the folder, not by what they hold."""
    log = delta_log(spark, str(location))
    version = int(latest_snapshot(spark, log).version())
    folder = location / "_delta_log"
    have = sum(1 for _ in folder.iterdir())
    while have < files:
        version += 1
        info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "MANUAL UPDATE",
                               "operationParameters": {}, "isBlindAppend": True}}
        (folder / f"{version:020d}.json").write_text(json.dumps(info) + "\n")
        have += 1
    latest_snapshot(spark, log)
    log.checkpoint()


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def measure(spark, location: Path) -> dict[str, float]:
    jvm = jvm_of(spark)
    log = delta_log(spark, str(location))
    snapshot = latest_snapshot(spark, log)
    checkpoint = int(snapshot.logSegment().checkpointProvider().version())
    prefix = jvm.org.apache.hadoop.fs.Path(f"file:{location}/_delta_log/{max(checkpoint, 0):020d}")
    conf = log.newDeltaHadoopConf()
    store = log.store()

    def listing():
        listed = store.listFrom(prefix, conf)
        while listed.hasNext():
            listed.next()

    return {
        "list_s": timed(listing),
        "read_s": timed(lambda: spark.read.format("delta").load(str(location)).count()),
        "append_s": timed(lambda: spark.range(1).write.format("delta").mode("append").save(str(location))),
    }


def main() -> None:
    from ingest.table import RAW_CHECKPOINT_INTERVAL

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,4000,16000",
                        help="files in the log folder, comma-separated, rising (a local folder holds 4 a commit)")
    parser.add_argument("--reps", type=int, default=10, help="measurements per size and store")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    location = STATE / "table"
    spark = session()
    # A raw table's checkpoint interval (ingest/table.py).
    first = spark.range(1).write.format("delta").option("delta.checkpointInterval", str(RAW_CHECKPOINT_INTERVAL))
    first.save(str(location))
    names = list(STORES)
    results: list[dict] = []
    for size in sizes:
        grow(spark, location, size)
        files = sum(1 for _ in (location / "_delta_log").iterdir())
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in names}
        for rep in range(args.reps + 1):  # the first rep warms both stores up and is not counted
            for name in (names if rep % 2 == 0 else names[::-1]):
                use_store(spark, STORES[name])
                figures = measure(spark, location)
                if rep:
                    samples[name].append(figures)
        for name in names:
            row = {"log_files": files, "store": name,
                   **{k: statistics.median(s[k] for s in samples[name]) for k in ("list_s", "read_s", "append_s")},
                   "samples": samples[name]}
            results.append(row)
            print(f"{files:>6} log files  {name:<22} listing {row['list_s'] * 1000:7.1f} ms  "
                  f"read {row['read_s']:.3f} s  append {row['append_s']:.3f} s", flush=True)
    spark.stop()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"sizes": sizes, "reps": args.reps, "results": results}, indent=1))
    print(f"medians of {args.reps} each; JSON in {OUT.relative_to(ROOT)}")
    shutil.rmtree(STATE, ignore_errors=True)


if __name__ == "__main__":
    main()
