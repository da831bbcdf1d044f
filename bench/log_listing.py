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

With --s3 the table is on an S3 server of the benchmark's own (S3Proxy, as `zync up --s3` starts
it; two files a commit there, the commit and its checksum), and the stores are Delta's S3 store
(S3SingleDriverLogStore, safe for one writer process only) and the project's
(zync.delta.CatalogCommitLogStore, jvm/delta-commits: each commit claimed in a database, here an
embedded Derby; a listing first asks it for the table's newest claim). JSON in
bench/out/log_listing_s3.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from zync import storage  # noqa: E402
from zync.spark_internals import delta_log, jvm_of, latest_snapshot  # noqa: E402
STATE = ROOT / ".local" / "bench-log-listing"
OUT = ROOT / "bench" / "out" / "log_listing.json"
STORES = {"delta (HDFSLogStore)": "io.delta.storage.HDFSLogStore", "name-first": "zync.delta.NameFirstLogStore"}
STORE_KEY = "spark.delta.logStore.file.impl"
# --s3: the table on an S3 server of the benchmark's own; Delta's store for S3 (one writer process
# only) against the project's, which claims each commit in a database (here Derby, embedded).
S3_STORES = {"delta (S3SingleDriverLogStore)": "io.delta.storage.S3SingleDriverLogStore",
             "catalog claims": "zync.delta.CatalogCommitLogStore"}
S3_STORE_KEY = "spark.delta.logStore.s3a.impl"
S3_PORT = "24490"


def session(claims_url: str | None = None):
    """A session with the project's Spark settings, but no catalog: the table is read by its path
    (with --s3, the commits' claims in the database at `claims_url`)."""
    from pyspark.sql import SparkSession

    from zync.config import load_target

    builder = SparkSession.builder.master("local[2]").appName("bench log listing")
    for key, value in load_target("local").spark_conf.items():
        if not key.startswith("spark.hadoop.javax.jdo"):
            builder = builder.config(key, value)
    if claims_url:
        builder = builder.config("spark.hadoop.zync.delta.commits.url", claims_url)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def use_store(spark, key: str, class_name: str) -> None:
    """Delta picks a scheme's store from the live SparkConf when a table's log is first opened:
    set it there and drop the cached logs, so the next read opens the table with this store."""
    jvm = jvm_of(spark)
    jvm.org.apache.spark.SparkEnv.get().conf().set(key, class_name)
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()


def grow(spark, location: str, files: int) -> None:
    """Commits of a commitInfo each, written as files beside the table's own, until its log folder holds
    `files` files; then a checkpoint, as the log's would be. Made through Delta's transaction, each would
    cost a Spark job (the table's protocol and metadata without a checksum); a listing costs by the
    files in the folder, not by what they hold."""
    log = delta_log(spark, location)
    version = int(latest_snapshot(spark, log).version())
    folder = storage.location(location).child("_delta_log")
    have = sum(1 for _ in folder.entries())
    while have < files:
        version += 1
        info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "MANUAL UPDATE",
                               "operationParameters": {}, "isBlindAppend": True}}
        folder.child(f"{version:020d}.json").write_bytes((json.dumps(info) + "\n").encode())
        have += 1
    latest_snapshot(spark, log)
    log.checkpoint()


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def measure(spark, location: str) -> dict[str, float]:
    jvm = jvm_of(spark)
    log = delta_log(spark, location)
    snapshot = latest_snapshot(spark, log)
    checkpoint = int(snapshot.logSegment().checkpointProvider().version())
    uri = location if "://" in location else f"file:{location}"
    prefix = jvm.org.apache.hadoop.fs.Path(f"{uri}/_delta_log/{max(checkpoint, 0):020d}")
    conf = log.newDeltaHadoopConf()
    store = log.store()

    def listing():
        listed = store.listFrom(prefix, conf)
        while listed.hasNext():
            listed.next()

    return {
        "list_s": timed(listing),
        "read_s": timed(lambda: spark.read.format("delta").load(location).count()),
        "append_s": timed(lambda: spark.range(1).write.format("delta").mode("append").save(location)),
    }


def main() -> None:
    from ingest.table import RAW_CHECKPOINT_INTERVAL

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,4000,16000",
                        help="files in the log folder, comma-separated, rising (a local folder holds 4 a commit)")
    parser.add_argument("--reps", type=int, default=10, help="measurements per size and store")
    parser.add_argument("--s3", action="store_true",
                        help="the table on an S3 server of the benchmark's own (S3Proxy, `zync up --s3`), "
                             "Delta's S3 store against the project's (docs/object-storage.md)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    stores, store_key, target = STORES, STORE_KEY, None
    if args.s3:
        os.environ.update({"ZYNC_STATE_DIR": str(STATE), "ZYNC_S3_PORT": S3_PORT})
        from stack import s3, services
        from zync.config import load_target

        os.environ.update({k: v for k, v in s3.environment().items() if k != "ZYNC_WAREHOUSE"})
        target = load_target("local")
        services.up(target, only={s3.NAME}, object_store=True)
        stores, store_key = S3_STORES, S3_STORE_KEY
        location = f"s3a://{s3.BUCKET}/bench-log-listing/table"
        spark = session(f"jdbc:derby:{STATE / 'claims'};create=true")
    else:
        location = str(STATE / "table")
        spark = session()
    # A raw table's checkpoint interval (ingest/table.py).
    first = spark.range(1).write.format("delta").option("delta.checkpointInterval", str(RAW_CHECKPOINT_INTERVAL))
    first.save(location)
    names = list(stores)
    results: list[dict] = []
    for size in sizes:
        grow(spark, location, size)
        files = sum(1 for _ in storage.location(location).child("_delta_log").entries())
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in names}
        for rep in range(args.reps + 1):  # the first rep warms both stores up and is not counted
            for name in (names if rep % 2 == 0 else names[::-1]):
                use_store(spark, store_key, stores[name])
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
    if target is not None:
        services.down(target)
    out = OUT.with_name("log_listing_s3.json") if args.s3 else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"sizes": sizes, "reps": args.reps, "store": "s3" if args.s3 else "local",
                               "results": results}, indent=1))
    print(f"medians of {args.reps} each; JSON in {out.relative_to(ROOT)}")
    shutil.rmtree(STATE, ignore_errors=True)


if __name__ == "__main__":
    main()
