"""Benchmark: a whole database's first ingest stage, the warm consumer against Spark's reader.

    .venv/bin/python bench/bootstrap.py [--tables 50] [--rows 2000]
        [--rounds 4] [--threads 4] [--seed 1]

One command, alone on the machine: its own Kafka, registry and catalog (state folder
.local/bench-bootstrap-state, ports of its own), stopped at the end. Each round makes a database
anew: --tables Debezium-shaped topics (bench/wide.py's shape) of --rows snapshot records each,
then times one ingest stage as `zync run`'s first cycle over them: every topic's watermarks read
once, one kept Ingest per topic on its own session of one engine, --threads topics at once, until
every raw table holds its topic. The rounds alternate two designs of a new table's first records:
- consumer: what zync run does (ingest/from_kafka.py SMALL_BACKLOG): a backlog this small is
  read by the Ingest's warm consumer and written in Python (ingest/arrow_rows.py);
- spark: the anchor, every first batch a Spark job of Spark's Kafka reader.
A first round over a few tables, each design once, warms the engine untimed.
Printed: each round's seconds and records per second, every raw table's row count checked
against what was produced, and each design's median.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.own_stack import own_stack  # noqa: E402
STATE = ROOT / ".local" / "bench-bootstrap-state"
PORTS = {"ZYNC_KAFKA_PORT": "24592", "ZYNC_REGISTRY_PORT": "24581", "ZYNC_CATALOG_PORT": "24927"}
DESIGNS = ("consumer", "spark")
WARM_UP_TABLES = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--rows", type=int, default=2000, help="snapshot records per table")
    parser.add_argument("--rounds", type=int, default=4, help="rounds, the designs alternating (ABBA...)")
    parser.add_argument("--threads", type=int, default=4, help="topics ingested at once (zync run --threads)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with own_stack(STATE, PORTS):
        run(args)


def order(rounds: int, designs: tuple[str, str] = DESIGNS) -> list[str]:
    """ABBA ABBA ...: each design as often first as second, neither always on a warmer engine."""
    pattern = [designs[0], designs[1], designs[1], designs[0]]
    return [pattern[i % 4] for i in range(rounds)]


def run(args: argparse.Namespace) -> None:
    from bench.wide import Source
    from ingest import from_kafka
    from ingest.from_kafka import Ingest, ingest_progress
    from zync import kafka_client
    from zync.config import load_target
    from zync.spark import spark_session

    target = load_target(None)
    spark = spark_session(target)
    watcher, admin = kafka_client.consumer(target, group="bench-bootstrap"), kafka_client.admin(target)
    consumer_backlog = from_kafka.SMALL_BACKLOG
    took: dict[str, list[float]] = {d: [] for d in DESIGNS}
    # Round 0 warms the engine (a fresh JVM's first jobs compile their code), both designs over a
    # few tables, untimed: without it the first timed round pays the warm-up alone.
    rounds = [(0, d, WARM_UP_TABLES) for d in DESIGNS] + [(n, d, args.tables)
                                                          for n, d in enumerate(order(args.rounds), start=1)]
    for number, design, tables in rounds:
        source = Source(target, f"bs{number}{design[0]}", tables, args.seed + number)
        source.snapshot(args.rows)
        jobs = [Ingest(target, [topic], progress=ingest_progress(quiet=True), spark=spark.newSession())
                for topic in source.topics]
        # The anchor: no backlog is small enough for the consumer, so every first batch is a Spark job.
        from_kafka.SMALL_BACKLOG = consumer_backlog if design == "consumer" else -1
        try:
            marks = kafka_client.watermarks(watcher, admin, set(source.topics))
            started = time.monotonic()
            with ThreadPoolExecutor(args.threads) as pool:
                list(pool.map(lambda job: job.run(exit_after=0.0, marks=marks), jobs))
            seconds = time.monotonic() - started
        finally:
            from_kafka.SMALL_BACKLOG = consumer_backlog
        records = tables * args.rows
        short = [(state.table.name, spark.table(state.table.name).count()) for job in jobs
                 for state in job.states.values()]
        short = [(table, count) for table, count in short if count != args.rows]
        for job in jobs:
            job.close()
        if number:
            took[design].append(seconds)
        print(f"round {number or 'warm-up'} ({design}): {seconds:.1f} s for {tables} topics, {records:,} records, "
              f"{records / seconds:,.0f} records/s; raw tables "
              + ("all complete" if not short else f"SHORT: {short[:5]}"), flush=True)
        if short:
            raise SystemExit(f"{len(short)} raw tables do not hold their topic's {args.rows} records")
    watcher.close()
    per_round = args.tables * args.rows
    print(f"\n{' '.join(['bench/bootstrap.py', *sys.argv[1:]])}")
    for design, rounds in took.items():
        if rounds:
            print(f"{design}: median {statistics.median(rounds):.1f} s, {per_round / statistics.median(rounds):,.0f} "
                  f"records/s ({args.tables} tables x {args.rows} records, {args.threads} threads; rounds "
                  f"{', '.join(f'{s:.1f}' for s in rounds)})")


if __name__ == "__main__":
    main()
