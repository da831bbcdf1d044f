"""Egress benchmark: zync to-kafka from a 1,000,000-row output table vs. the produce ceiling.

One command, one run (its own state folder and ports; starts and stops its own services):

    .venv/bin/python bench/egress_throughput.py [--rows 1000000] [--batch-size 100000]

1. builds an output table in the CONTRACT.md shape (out rows with ~10-field
   values, a fifth of them partial updates, some tombstones, plus a done row
   per out row), in a child process;
2. runs `zync to-kafka` on it as a user would (a child process), timing it
   from zync's own summary line and sampling the RSS of its Python process and
   of its Spark JVM;
3. the ceiling: reads the exact bytes egress produced back into memory, then
   confluent-kafka produces them to a fresh topic with the same producer
   settings (idempotent, acks=all, lz4), timed from first produce to flush.

Figures go to stdout and bench/out/egress_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".local" / "bench-egress-state"
ENV = {**os.environ, "ZYNC_PROJECT_DIR": str(ROOT), "ZYNC_STATE_DIR": str(STATE),
       "ZYNC_KAFKA_PORT": "24192", "ZYNC_REGISTRY_PORT": "24181", "ZYNC_CATALOG_PORT": "24527", "ZYNC_TARGET": "local"}
TABLE, TOPIC, CEILING_TOPIC = "bench_egress", "bench_egress_out", "bench_egress_ceiling"
ZYNC = [str(ROOT / ".venv" / "bin" / "zync")]

sys.path.insert(0, str(ROOT))
from bench.rss import PeakRss  # noqa: E402


def build_table(rows: int) -> None:
    """Child mode: the output table, written with Spark in one commit."""
    os.environ.update(ENV)
    from zync.config import load_target
    from zync.spark import spark_session

    spark = spark_session(load_target("local"))
    spark.sql("create database if not exists zync")
    spark.sql(f"drop table if exists zync.{TABLE}")
    spark.range(0, rows, 1, 8).createOrReplaceTempView("ids")
    spark.sql(f"""
        create table zync.{TABLE} using delta as
        select named_struct('topic', '{TOPIC}', 'partition', 0, 'offset', id) as kafka, 'out' as kind,
               named_struct('id', id % 200000) as key,
               case when id % 97 = 0 then null else named_struct(
                 'id', id % 200000,
                 'customer', concat('customer-', cast(id % 5000 as string)),
                 'item', concat('item-', cast(id % 731 as string)),
                 'quantity', cast(id % 17 as int),
                 'price', cast((id % 10000) / 100.0 as decimal(10, 2)),
                 'status', element_at(array('new', 'paid', 'shipped', 'cancelled'), cast(id % 4 + 1 as int)),
                 'created_at', timestamp_micros(1700000000000000 + id * 1000),
                 'updated_at', timestamp_micros(1700000000000000 + id * 2000),
                 'notes', case when id % 3 = 0 then null else repeat('n', cast(id % 40 as int)) end,
                 'active', id % 2 = 0) end as value,
               case when id % 97 = 0 then null
                    when id % 5 = 0 then array('id', 'status', 'updated_at')
                    else array('id', 'customer', 'item', 'quantity', 'price', 'status', 'created_at',
                               'updated_at', 'notes', 'active') end as fields,
               cast(null as string) as status, 'bench' as run_id
        from ids
        union all
        select named_struct('topic', 'bench_input', 'partition', 0, 'offset', id), 'done', null, null, null,
               'processed', 'bench'
        from ids""")
    spark.stop()


def run_egress(batch_size: int) -> dict:
    started = time.monotonic()
    process = subprocess.Popen([*ZYNC, "to-kafka", "--table", TABLE, "--topic", TOPIC, "--batch-size", str(batch_size)],
                               env=ENV, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    rss = PeakRss(process.pid)
    _, err = process.communicate()
    rss.stop()
    wall = time.monotonic() - started
    if process.returncode != 0:
        raise SystemExit(f"zync to-kafka failed:\n{err}")
    summary = re.search(r"to-kafka: ([\d,]+) records .* in ([\d.]+)s", err)
    records, seconds = int(summary.group(1).replace(",", "")), float(summary.group(2))
    return {"records": records, "seconds": seconds, "records_per_s": records / seconds,
            "wall_seconds_with_spark_start": wall, "peak_rss_python_mb": rss.python_kb / 1024,
            "peak_rss_spark_jvm_mb": rss.jvm_kb / 1024, "batch_size": batch_size}


def ceiling(expected: int) -> dict:
    """confluent-kafka producing the bytes egress produced, with the same producer settings."""
    os.environ.update(ENV)
    from confluent_kafka import TopicPartition

    from zync import kafka_client
    from zync.config import load_target

    target = load_target("local")
    consumer = kafka_client.consumer(target, group="bench-egress-ceiling", **{"fetch.max.bytes": 52428800})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    keys, values = [], []
    while len(values) < expected:
        for msg in consumer.consume(10000, timeout=1.0):
            if msg.error():
                raise SystemExit(f"reading {TOPIC}: {msg.error()}")
            keys.append(msg.key())
            values.append(msg.value())
    consumer.close()
    kafka_client.ensure_topic(target, CEILING_TOPIC)
    producer = kafka_client.producer(target)
    produce = producer.produce
    started = time.monotonic()
    for k, v in zip(keys, values):
        while True:
            try:
                produce(CEILING_TOPIC, v, k, 0)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush()
    seconds = time.monotonic() - started
    bytes_total = sum(len(v or b"") + len(k or b"") for k, v in zip(keys, values))
    return {"records": len(values), "seconds": seconds, "records_per_s": len(values) / seconds,
            "mean_record_bytes": bytes_total / len(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--keep", action="store_true", help="leave the bench's services running")
    parser.add_argument("--build-only", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_only:
        build_table(args.build_only)
        return
    subprocess.run([*ZYNC, "down"], env=ENV, cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["rm", "-rf", str(STATE)], check=True)
    subprocess.run([*ZYNC, "up"], env=ENV, cwd=ROOT, check=True)
    try:
        t0 = time.monotonic()
        subprocess.run([sys.executable, __file__, "--build-only", str(args.rows)], env=ENV, cwd=ROOT, check=True)
        build_s = time.monotonic() - t0
        egress = run_egress(args.batch_size)
        ceil = ceiling(egress["records"])
    finally:
        if not args.keep:
            subprocess.run([*ZYNC, "down"], env=ENV, cwd=ROOT, capture_output=True)
    load = os.getloadavg()
    result = {"rows": args.rows, "build_seconds": build_s, "egress": egress, "ceiling": ceil,
              "egress_vs_ceiling": ceil["records_per_s"] / egress["records_per_s"],
              "cpus": os.cpu_count(), "loadavg_at_end": load}
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "egress_throughput.json").write_text(json.dumps(result, indent=2))
    print(f"egress benchmark, {args.rows:,} out rows ({egress['batch_size']:,} per batch); "
          f"load average {load[0]:.1f} at the end, {os.cpu_count()} cores")
    print(f"  zync to-kafka   {egress['records_per_s']:>10,.0f} records/s  ({egress['records']:,} in {egress['seconds']:.1f}s; "
          f"{egress['wall_seconds_with_spark_start']:.1f}s with Spark start-up)")
    print(f"  ceiling         {ceil['records_per_s']:>10,.0f} records/s  (confluent-kafka producing the same "
          f"{ceil['records']:,} encoded records, {ceil['mean_record_bytes']:.0f} bytes each, in {ceil['seconds']:.1f}s)")
    print(f"  ratio           {result['egress_vs_ceiling']:.2f}x slower than the ceiling (target: within 2x)")
    print(f"  peak RSS        zync Python {egress['peak_rss_python_mb']:.0f} MB, its Spark JVM "
          f"{egress['peak_rss_spark_jvm_mb']:.0f} MB (table build {build_s:.0f}s)")


if __name__ == "__main__":
    main()
