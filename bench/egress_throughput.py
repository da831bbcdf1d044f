"""Egress benchmark: zync to-kafka from a 1,000,000-row output table vs. a Spark job and the produce ceiling.

One command, one run (its own state folder and ports; starts and stops its own services):

    .venv/bin/python bench/egress_throughput.py [--rows 1000000] [--batch-size 100000] [--repeat 3]
        [--memory-batch-sizes 10000,25000] [--zync-only] [--keep] [--reuse]

Ports: ZYNC_KAFKA_PORT, ZYNC_REGISTRY_PORT, ZYNC_CATALOG_PORT (defaults 24192,
24181, 24527), so that several people's benchmarks can share a machine.

1. builds an output table in the CONTRACT.md shape (out rows with ~10-field
   values, a fifth of them partial updates, some tombstones, plus a done row
   per out row), in a child process;
2. `--repeat` rounds, alternating in each: `zync to-kafka` on it as a user
   would (a child process, the topic deleted before each run so that every
   run publishes every row), and the anchor: what a Spark user writes
   instead, a fresh Spark application (the project's jars and Spark settings)
   that reads the same out rows, finds their field sets, encodes the values
   with spark-avro's to_avro and the Confluent 5-byte header per field set
   (the very schemas zync registers) and writes them with
   `write.format("kafka")` to a fresh single-partition topic. It checks
   nothing; zync checks every delivered offset. Both are timed as whole
   processes (JVM start included), with the peak RSS of the Python process
   and of its Spark JVM;
3. `--memory-batch-sizes`: `zync to-kafka` once more at each of these
   batch sizes, for its peak RSS per batch size (the memory bound);
4. the ceiling: reads the exact bytes egress produced back into memory, then
   confluent-kafka produces them to a fresh topic with the same producer
   settings (idempotent, acks=all, lz4), timed from first produce to flush.

`--zync-only` leaves out the anchor and the ceiling (memory figures only).

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
ENV = {**os.environ, "ZYNC_PROJECT_DIR": str(ROOT), "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local",
       "ZYNC_KAFKA_PORT": os.environ.get("ZYNC_KAFKA_PORT", "24192"),
       "ZYNC_REGISTRY_PORT": os.environ.get("ZYNC_REGISTRY_PORT", "24181"),
       "ZYNC_CATALOG_PORT": os.environ.get("ZYNC_CATALOG_PORT", "24527")}
TABLE, TOPIC, CEILING_TOPIC = "bench_egress", "bench_egress_out", "bench_egress_ceiling"
ANCHOR_TOPIC = "bench_egress_anchor"
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


def anchor(topic: str) -> None:
    """Child mode: the Spark job a user would write instead of zync to-kafka (timed as a whole by the parent)."""
    os.environ.update(ENV)
    from pyspark.sql import functions as F

    from egress.encode import key_column, value_column
    from egress.schemas import TopicSchemas
    from zync.config import load_target
    from zync.spark import spark_session
    from zync.wire import Registry

    target = load_target("local")
    spark = spark_session(target)
    rows = spark.table(f"zync.{TABLE}").where("kind = 'out'")
    # The field sets decide the schemas, so a user's job must find them too (one small scan).
    field_sets = [r["fields"] for r in rows.where("value is not null").select("fields").distinct().collect()]
    types = {f.name: f.dataType for f in rows.schema.fields}
    schemas = TopicSchemas(Registry(target.schema_registry), TOPIC)  # zync's subjects: the same schema ids
    shapes, groups = {}, []
    for fields in field_sets:
        shape = schemas.value(types["value"], tuple(fields))
        shapes[shape.fields] = shape
        groups.append((list(fields), shape.fields))
    (rows.select(key_column(rows, schemas.key(types["key"])).alias("key"),
                 value_column(rows, shapes, groups).alias("value"))
     .write.format("kafka")
     .option("kafka.bootstrap.servers", target.kafka["bootstrap.servers"])
     .option("topic", topic)
     # zync's producer settings (zync.kafka_client.producer)
     .option("kafka.acks", "all").option("kafka.enable.idempotence", "true")
     .option("kafka.compression.type", "lz4").option("kafka.linger.ms", "20")
     .save())
    spark.stop()


def timed(command: list[str]) -> tuple[float, str, PeakRss]:
    """Run a child process to its end: (wall seconds, its stderr, its peak RSS)."""
    started = time.monotonic()
    process = subprocess.Popen(command, env=ENV, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    rss = PeakRss(process.pid)
    _, err = process.communicate()
    rss.stop()
    wall = time.monotonic() - started
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{err}")
    return wall, err, rss


def fresh_topic(topic: str) -> None:
    """Delete the topic (if any) and wait until the broker no longer lists it."""
    from zync import kafka_client
    from zync.config import load_target

    target = load_target("local")
    if not kafka_client.topic_exists(target, topic):
        return
    client = kafka_client.admin(target)  # kept alive: its futures fail once the handle is destroyed
    for future in client.delete_topics([topic]).values():
        future.result()
    deadline = time.monotonic() + 60
    while kafka_client.topic_exists(target, topic):
        if time.monotonic() > deadline:
            raise SystemExit(f"topic {topic} still listed 60 s after its deletion")
        time.sleep(0.5)
    time.sleep(1.0)  # the partition's log directory goes asynchronously; re-creating at once can fail


def run_egress(batch_size: int) -> dict:
    os.environ.update(ENV)
    fresh_topic(TOPIC)
    wall, err, rss = timed([*ZYNC, "to-kafka", "--table", TABLE, "--topic", TOPIC, "--batch-size", str(batch_size)])
    summary = re.search(r"to-kafka: ([\d,]+) records .* in ([\d.]+)s", err)
    records, seconds = int(summary.group(1).replace(",", "")), float(summary.group(2))
    return {"records": records, "wall_seconds": wall, "records_per_s": records / wall, "summary_seconds": seconds,
            "cpu_seconds": rss.cpu_s, "peak_rss_python_mb": rss.python_kb / 1024, "peak_rss_spark_jvm_mb": rss.jvm_kb / 1024,
            "batch_size": batch_size}


def run_anchor(round_no: int, expected: int) -> dict:
    os.environ.update(ENV)
    from zync import kafka_client
    from zync.config import load_target

    target = load_target("local")
    topic = f"{ANCHOR_TOPIC}_{round_no}"
    fresh_topic(topic)
    kafka_client.ensure_topic(target, topic)
    wall, _, rss = timed([sys.executable, __file__, "--anchor-only", topic])
    written = kafka_client.high_water_marks(target, topic)[0]
    if written != expected:
        raise SystemExit(f"the anchor wrote {written:,} records to {topic}, not {expected:,}")
    return {"records": written, "wall_seconds": wall, "records_per_s": written / wall, "cpu_seconds": rss.cpu_s,
            "peak_rss_python_mb": rss.python_kb / 1024, "peak_rss_spark_jvm_mb": rss.jvm_kb / 1024}


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
    parser.add_argument("--repeat", type=int, default=3, help="rounds of zync and the anchor, alternating")
    parser.add_argument("--memory-batch-sizes", default="",
                        help="comma-separated batch sizes: one more zync run at each, for peak RSS per batch size")
    parser.add_argument("--zync-only", action="store_true", help="no anchor, no ceiling: zync's own figures")
    parser.add_argument("--keep", action="store_true", help="leave the bench's services running")
    parser.add_argument("--reuse", action="store_true",
                        help="services and table already there (from --keep with the same --rows): skip both")
    parser.add_argument("--build-only", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--anchor-only", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_only:
        build_table(args.build_only)
        return
    if args.anchor_only:
        anchor(args.anchor_only)
        return
    build_s = 0.0
    if not args.reuse:
        subprocess.run([*ZYNC, "down"], env=ENV, cwd=ROOT, check=True, capture_output=True)
        subprocess.run(["rm", "-rf", str(STATE)], check=True)
        subprocess.run([*ZYNC, "up"], env=ENV, cwd=ROOT, check=True)
    try:
        if not args.reuse:
            t0 = time.monotonic()
            subprocess.run([sys.executable, __file__, "--build-only", str(args.rows)], env=ENV, cwd=ROOT, check=True)
            build_s = time.monotonic() - t0
        runs: list[dict] = []
        for round_no in range(args.repeat):
            # Alternate which goes first, so that neither always meets a warmer page cache.
            order = ["zync", "anchor"] if round_no % 2 == 0 else ["anchor", "zync"]
            if args.zync_only:
                order = ["zync"]
            for which in order:
                run = run_egress(args.batch_size) if which == "zync" else run_anchor(round_no, args.rows)
                runs.append({"round": round_no, "which": which, **run})
                print(f"  round {round_no + 1}: {which:<6} {run['wall_seconds']:6.1f}s", flush=True)
        by_batch_size = [run_egress(int(size)) for size in args.memory_batch_sizes.split(",") if size]
        ceil = None if args.zync_only else ceiling(args.rows)
    finally:
        if not args.keep:
            subprocess.run([*ZYNC, "down"], env=ENV, cwd=ROOT, capture_output=True)
    load = os.getloadavg()
    zync_runs = [r for r in runs if r["which"] == "zync"]
    anchor_runs = [r for r in runs if r["which"] == "anchor"]
    best_zync = min(zync_runs, key=lambda r: r["wall_seconds"])
    best_anchor = min(anchor_runs, key=lambda r: r["wall_seconds"]) if anchor_runs else None
    result = {"rows": args.rows, "batch_size": args.batch_size, "build_seconds": build_s, "runs": runs,
              "by_batch_size": by_batch_size, "ceiling": ceil,
              "zync_vs_anchor": best_zync["wall_seconds"] / best_anchor["wall_seconds"] if best_anchor else None,
              "cpus": os.cpu_count(), "loadavg_at_end": load}
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "egress_throughput.json").write_text(json.dumps(result, indent=2))

    def times(rs: list[dict]) -> str:
        return ", ".join(f"{r['wall_seconds']:.1f}" for r in rs) + "s; CPU " + ", ".join(
            f"{r['cpu_seconds']:.0f}" for r in rs)

    def peak(rs: list[dict]) -> str:
        return (f"peak RSS Python {max(r['peak_rss_python_mb'] for r in rs):.0f} MB, "
                f"Spark JVM {max(r['peak_rss_spark_jvm_mb'] for r in rs):.0f} MB")

    print(f"egress benchmark, {args.rows:,} out rows (zync --batch-size {args.batch_size:,}); "
          f"load average {load[0]:.1f} at the end, {os.cpu_count()} cores; whole processes, JVM start included")
    print(f"  zync to-kafka   {best_zync['records_per_s']:>10,.0f} records/s  best {best_zync['wall_seconds']:.1f}s "
          f"of {times(zync_runs)}s (zync's own summary: {best_zync['summary_seconds']:.1f}s); {peak(zync_runs)}")
    for run in by_batch_size:
        print(f"  --batch-size {run['batch_size']:>9,}  {times([run])}s; {peak([run])}")
    if best_anchor is None:
        print(f"  (--zync-only: no anchor, no ceiling) table build {build_s:.0f}s")
        return
    print(f"  anchor          {best_anchor['records_per_s']:>10,.0f} records/s  best {best_anchor['wall_seconds']:.1f}s "
          f"of {times(anchor_runs)}s (Spark: to_avro + header, write.format(\"kafka\")); {peak(anchor_runs)}")
    print(f"  ceiling         {ceil['records_per_s']:>10,.0f} records/s  (confluent-kafka producing the same "
          f"{ceil['records']:,} encoded records, {ceil['mean_record_bytes']:.0f} bytes each, in {ceil['seconds']:.1f}s)")
    print(f"  ratio           zync / anchor {result['zync_vs_anchor']:.2f}x (target: at most 1.2x); "
          f"table build {build_s:.0f}s")


if __name__ == "__main__":
    main()
