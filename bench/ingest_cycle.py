"""Probe: what one `zync run` ingest stage costs per changed topic, over many Debezium topics.

    .venv/bin/python bench/ingest_cycle.py [--tables 40] [--threads 4]
        [--rounds 8] [--changes 5] [--writers python,spark] [--log-stores zync,delta]
        [--checkpoint-interval N] [--read] [--jfr FILE]

One command, alone on the machine: its own Kafka, registry and catalog (state folder
.local/bench-ingest-cycle-state, ports of its own), stopped at the end. It makes --tables
Debezium-shaped topics (bench/wide.py's shape, 50 snapshot rows each) and one kept Ingest per topic,
each on its own session of one engine, as `zync run` keeps them; a first stage creates the raw tables
(Spark's reader). Then, per round, --changes change events to every table, and one ingest stage as
zync run's: every topic's watermarks read once, the due topics' ingests --threads at a time.
Printed: the first stage's seconds, and per round the stage's seconds and seconds per topic.
--writers: who writes a round's small batches, taken in turn round by round: `python` (decoded and
written in Python, the JVM commits the file: ingest/arrow_rows.py, the default) and `spark` (the
anchor: every batch a Spark job); a median per writer at the end.
--log-stores: who writes the Delta log's files, taken in turn round by round (with --writers, every
pair in turn): `zync` (the project's settings: zync.delta.NameFirstLogStore, checksums through
Hadoop's FileSystem) and `delta` (Delta's own: HDFSLogStore, checksums through Hadoop's
FileContext, each of which starts a `readlink` process per file on a local folder).
A round in which the tables reach a multiple of Delta's checkpoint interval shows its cost.
--checkpoint-interval N sets every raw table's `delta.checkpointInterval` after the first stage.
--read then reads every raw table once per round (its rows past an offset, counted, one table at a
time, as a mirror's view or an output's run reads it): what a longer log past the checkpoint costs a
reader, each read on a snapshot the round's commit made new.
--jfr FILE records the driver JVM with Java Flight Recorder over the rounds (profile settings).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.own_stack import own_stack  # noqa: E402
STATE = ROOT / ".local" / "bench-ingest-cycle-state"
PORTS = {"ZYNC_KAFKA_PORT": "24492", "ZYNC_REGISTRY_PORT": "24481", "ZYNC_CATALOG_PORT": "24827"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--threads", type=int, default=4, help="topics ingested at once (zync run --threads)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--changes", type=int, default=5, help="change events per table and round")
    parser.add_argument("--checkpoint-interval", type=int, metavar="N",
                        help="set the raw tables' delta.checkpointInterval after they are created")
    parser.add_argument("--writers", default="python,spark",
                        help="who writes each round's batches, in turn: python, spark (default: both, alternating)")
    parser.add_argument("--log-stores", default="zync",
                        help="who writes the Delta log, in turn by round: zync, delta (default zync)")
    parser.add_argument("--read", action="store_true", help="read every raw table once per round, timed")
    parser.add_argument("--jfr", type=Path, help="record the driver JVM over the rounds into this file")
    args = parser.parse_args()
    with own_stack(STATE, PORTS):
        run(args)


# The anchor's log settings: Delta's own store, and Spark's default checkpoint file manager, which
# writes Delta's checksums; the project's are profiles/profiles.yml's values of the same keys.
DELTA_LOG_SETTINGS = {"spark.delta.logStore.file.impl": "io.delta.storage.HDFSLogStore",
                      "spark.sql.streaming.checkpointFileManagerClass":
                          "org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager"}
LOG_STORES = ("zync", "delta")


def use_log_settings(spark, sessions, settings: dict[str, str]) -> None:
    """The store through bench/log_listing.py's switch; checksums with each session's own manager."""
    from bench.log_listing import STORE_KEY, use_store

    use_store(spark, settings[STORE_KEY])
    for session in sessions:
        for key, value in settings.items():
            if key != STORE_KEY:
                session.conf.set(key, value)


def run(args: argparse.Namespace) -> None:
    from bench.wide import Source
    from ingest.arrow_rows import ArrowRows
    from ingest.from_kafka import Ingest, ingest_progress
    from zync import kafka_client
    from zync.config import load_target
    from zync.spark import spark_session
    from zync.spark_internals import driver_process

    target = load_target(None)
    spark = spark_session(target)
    source = Source(target, "ic", args.tables, 1)
    source.snapshot(50)
    watcher, admin = kafka_client.consumer(target, group="bench-ingest-cycle"), kafka_client.admin(target)
    jobs = [Ingest(target, [topic], progress=ingest_progress(quiet=True), spark=spark.newSession())
            for topic in source.topics]

    def stage() -> tuple[float, int]:
        marks = kafka_client.watermarks(watcher, admin, set(source.topics))
        due = [job for job in jobs if job.waiting(watcher, marks)]
        started = time.monotonic()
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(lambda job: job.run(exit_after=0.0, marks=marks), due))
        return time.monotonic() - started, len(due)

    took, topics = stage()
    print(f"first stage (creates the raw tables): {took:.1f} s for {topics} topics", flush=True)
    tables = [state.table.name for job in jobs for state in job.states.values()]
    if args.checkpoint_interval:
        for table in tables:
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES "
                      f"('delta.checkpointInterval' = '{args.checkpoint_interval}')")

    def read() -> float:
        started = time.monotonic()
        for table in tables:
            spark.table(table).where("kafka.offset >= 0").count()
        return time.monotonic() - started
    jvm = None
    if args.jfr:
        launched = driver_process(spark)
        children = subprocess.run(["pgrep", "-P", str(launched.pid), "java"], capture_output=True, text=True)
        jvm = (children.stdout.split() or [str(launched.pid)])[0]
        subprocess.run(["jcmd", jvm, "JFR.start", "name=bench", "settings=profile", f"filename={args.jfr}"], check=True)
    writers = [w.strip() for w in args.writers.split(",")]
    if set(writers) - {"python", "spark"}:
        raise SystemExit(f"--writers takes python and spark, not {args.writers}")
    stores = [s.strip() for s in args.log_stores.split(",")]
    if set(stores) - set(LOG_STORES):
        raise SystemExit(f"--log-stores takes {' and '.join(LOG_STORES)}, not {args.log_stores}")
    designs = [(w, s) for w in writers for s in stores]
    settings = {"zync": {key: target.spark_conf[key] for key in DELTA_LOG_SETTINGS}, "delta": DELTA_LOG_SETTINGS}
    by_writer: dict[tuple[str, str], list[float]] = {d: [] for d in designs}
    per_topic, per_read = [], []
    in_use = "zync"  # the session's own settings
    for number in range(1, args.rounds + 1):
        writer, store = designs[(number - 1) % len(designs)]
        if store != in_use:
            use_log_settings(spark, [job.spark for job in jobs], settings[store])
            in_use = store
        python_before = 0
        for job in jobs:
            job.committer.arrow_rows = ArrowRows(job.decoder.schemas) if writer == "python" else None
            python_before += job.committer.python_commits
        for table in range(args.tables):
            for _ in range(args.changes):
                source.change(table)
        source.flush()
        took, topics = stage()
        per_topic.append(took / max(topics, 1))
        by_writer[(writer, store)].append(per_topic[-1])
        in_python = sum(job.committer.python_commits for job in jobs) - python_before
        line = (f"round {number} ({writer}, {store} log store): {took:.2f} s for {topics} topics, {per_topic[-1]:.3f} s a topic; "
                f"{in_python} commits written in Python")
        if args.read:
            per_read.append(read() / len(tables))
            line += f"; read {per_read[-1]:.3f} s a table"
        print(line, flush=True)
    if jvm:
        subprocess.run(["jcmd", jvm, "JFR.stop", "name=bench"], check=True)
    for (writer, store), rounds in by_writer.items():
        if rounds:
            print(f"{args.tables} tables, {args.threads} threads, {writer} writes, {store} log store: median "
                  f"{statistics.median(rounds):.3f} s a topic (rounds {', '.join(f'{s:.3f}' for s in rounds)})")
    if per_read:
        print(f"reads: mean {statistics.fmean(per_read):.3f} s a table, median {statistics.median(per_read):.3f} "
              f"(rounds {', '.join(f'{s:.3f}' for s in per_read)})")
        print(f"ingest + read: mean {statistics.fmean(per_topic) + statistics.fmean(per_read):.3f} s a table")
    for job in jobs:
        job.close()
    watcher.close()


if __name__ == "__main__":
    main()
