"""Ingest in the warm engine, one command:  .venv/bin/python bench/ingest_warm.py [--records N --repeat R]

`zync run` keeps one SparkSession and runs ingest inside it (service/run.py's
ingest stage: an `Ingest`, `run(exit_after=0.0)`), so the JVM start and the
first queries' JIT warm-up are paid once. This benchmark does the same: one
SparkSession (zync.spark.spark_session, the target's settings), one warm-up
ingest of the whole topic, then --repeat timed ingests of the same N
(default 1,000,000) Debezium-shaped events (bench/ingest_throughput.py's
topic, 2 partitions) into a fresh raw table each, in-process.

Printed, from the same run:
- `warm`: each timed `Ingest.run`'s seconds (its Spark jobs, stages and the
  driver's time outside them: resume, planning, Delta's commit and checks);
- `--variants`: other settings of the same ingest (see VARIANTS), alternating
  with the default run by run; every table's contents are asserted identical
  to the default's (schema, rows, an order-independent hash of every row);
- `--phases`: where the time goes, the same batch's offsets taken further each
  time (Kafka read only; + the header match; + from_avro; + conversion to an
  existing table's types), each written to Spark's `noop` sink; then the
  decoded batch written as plain Parquet, as Delta with statistics on the
  envelope and key (what ingest sets), and with Delta's default statistics.
  The whole ingest (the runs above) adds the Delta commit and its checks: the
  runs' time outside Spark jobs.
JSON goes to bench/out/ingest_warm.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ingest_throughput import OUT, build_topic  # noqa: E402 - sets the bench's ports and state first
from zync.spark import session_conf  # noqa: E402
from zync.spark_internals import java_context  # noqa: E402

TABLES = OUT / "warm-tables"


# Settings tried against the default, each alone. Session settings apply to the ingest's write;
# zync.bench.* ones are this benchmark's: the Kafka read's task count, and the earlier ingest design
# (`before`), for the same run to show what each change bought.
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "before": {"zync.bench.parquet": "earlier", "zync.bench.conform": "earlier"},
    "parquet-before": {"zync.bench.parquet": "earlier"},
    "conform-before": {"zync.bench.conform": "earlier"},
    "lz4": {"spark.sql.parquet.compression.codec": "lz4"},
    "zstd": {"spark.sql.parquet.compression.codec": "zstd"},
    "uncompressed": {"spark.sql.parquet.compression.codec": "uncompressed"},
    "no-dictionary": {"parquet.enable.dictionary": "false"},
    "no-dictionary-zstd": {"parquet.enable.dictionary": "false", "spark.sql.parquet.compression.codec": "zstd"},
    "no-dictionary-lz4": {"parquet.enable.dictionary": "false", "spark.sql.parquet.compression.codec": "lz4"},
    "page-1mb": {"parquet.page.size": str(1 << 20), "parquet.block.size": str(256 << 20)},
    "tasks-4": {"zync.bench.minPartitions": "4"},
    "tasks-1": {"zync.bench.minPartitions": "1"},
    "files-250k": {"spark.sql.files.maxRecordsPerFile": "250000"},
}


def _jobs(spark, group: str) -> list[dict]:
    """The Spark jobs run under `group`: seconds, stages and tasks, from Spark's status store."""
    store = java_context(spark).sc().statusStore()
    found = []
    jobs = store.jobsList(None)
    for i in range(jobs.size()):
        job = jobs.apply(i)
        if not job.jobGroup().isDefined() or job.jobGroup().get() != group:
            continue
        submitted, completed = job.submissionTime(), job.completionTime()
        seconds = ((completed.get().getTime() - submitted.get().getTime()) / 1000
                   if submitted.isDefined() and completed.isDefined() else 0.0)
        found.append({"seconds": seconds, "stages": job.stageIds().size(), "tasks": job.numTasks(),
                      "description": (job.description().get() if job.description().isDefined() else job.name())[:80]})
    return found


def warm_ingest(spark, target, topic: str, name: str, expect: int, settings: dict[str, str],
                like: str | None = None) -> dict:
    """One `Ingest.run` as zync run's ingest stage runs it; its time and Spark jobs.

    Into a fresh table (its first batch creates it), or, with `like` (a table's location), into an
    empty table of that one's schema and properties: what every later run meets (zync run's next
    cycles, a second `zync from-kafka`), where the column types are the table's as Delta reads them.
    """
    from ingest.from_kafka import Ingest, ingest_progress

    location = TABLES / name
    shutil.rmtree(location, ignore_errors=True)
    if like is not None:
        _empty_like(spark, like, location)
    group = f"bench-{name}-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, name)
    tasks = settings.get("zync.bench.minPartitions")
    session = {k: v for k, v in settings.items() if not k.startswith("zync.bench.")}
    hadoop = java_context(spark).hadoopConfiguration()
    parquet = {k: v for k, v in session.items() if k.startswith("parquet.")}
    before = {k: hadoop.get(k) for k in parquet}
    for k, v in parquet.items():
        hadoop.set(k, v)
    try:
        with session_conf(spark, {k: v for k, v in session.items() if not k.startswith("parquet.")}), _tasks(tasks), \
                _earlier_code(settings):
            job = Ingest(target, [topic], location=str(location), progress=ingest_progress(quiet=True))
            started = time.monotonic()
            records = job.run(exit_after=0.0)
            seconds = time.monotonic() - started
    finally:
        for k, v in before.items():
            if v is None:
                hadoop.unset(k)
            else:
                hadoop.set(k, v)
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert records == expect, f"{name}: {records} committed, {expect} expected"
    jobs = _jobs(spark, group)
    in_jobs = sum(j["seconds"] for j in jobs)
    files = sorted(location.glob("*.parquet"))
    return {"name": name, "records": records, "seconds": seconds, "records_per_s": records / seconds,
            "spark_jobs": len(jobs), "stages": sum(j["stages"] for j in jobs), "jobs_seconds": in_jobs,
            "driver_outside_jobs_s": seconds - in_jobs, "jobs": jobs, "files": len(files),
            "bytes": sum(f.stat().st_size for f in files), "location": str(location)}


def _empty_like(spark, like: str, location: Path) -> None:
    """An empty Delta table with the schema and table properties of the table at `like`."""
    properties = {r["key"]: r["value"] for r in spark.sql(f"show tblproperties delta.`{like}`").collect()
                  if r["key"].startswith(("delta.dataSkipping", "zync."))}
    spark.read.format("delta").load(like).limit(0).write.format("delta").save(str(location))
    texts = ", ".join(f"'{k}' = '" + v.replace("\\", "\\\\").replace("'", "\\'") + "'" for k, v in properties.items())
    spark.sql(f"alter table delta.`{location}` set tblproperties ({texts})")


@contextmanager
def _earlier_code(settings: dict[str, str]) -> Iterator[None]:
    """The earlier ingest design where a variant asks: Parquet's defaults for the raw table
    (snappy, dictionaries), and the table's types reached by a struct rebuilt field by field."""
    import ingest.evolution
    import ingest.table

    parquet, only_nullability = dict(ingest.table.PARQUET_SETTINGS), ingest.evolution.only_nullability
    if settings.get("zync.bench.parquet") == "earlier":
        ingest.table.PARQUET_SETTINGS.clear()
    if settings.get("zync.bench.conform") == "earlier":
        ingest.evolution.only_nullability = lambda source, target: False
    try:
        yield
    finally:
        ingest.table.PARQUET_SETTINGS.update(parquet)
        ingest.evolution.only_nullability = only_nullability


@contextmanager
def _tasks(tasks: str | None) -> Iterator[None]:
    """Spark's Kafka read split into `tasks` tasks (minPartitions) instead of ingest's own choice."""
    if tasks is None:
        yield
        return
    from pyspark.sql import DataFrameReader

    original = DataFrameReader.option

    def option(self, key, value):
        return original(self, key, tasks if key == "minPartitions" else value)

    DataFrameReader.option = option
    try:
        yield
    finally:
        DataFrameReader.option = original


def fingerprint(spark, location: str) -> dict:
    """What 'identical contents' is checked by: the schema, the rows, an order-independent hash of every row."""
    from pyspark.sql import functions as F

    frame = spark.read.format("delta").load(location)
    row = frame.agg(F.count("*").alias("rows"),
                    F.sum(F.xxhash64("kafka", "key", "value").cast("decimal(38,0)")).alias("hash"),
                    F.sum(F.hash("kafka", "key", "value").cast("bigint")).alias("hash32")).first()
    return {"schema": frame.schema.json(), "rows": row["rows"], "hash": str(row["hash"]), "hash32": row["hash32"]}


def phases(spark, target, topic: str, expect: int, scratch: Path) -> dict[str, float]:
    """The same batch's offsets taken one step further each time; seconds of each step's Spark job."""
    from pyspark.sql import functions as F

    from ingest.fallback import spark_options
    from ingest.schemas import WriterSchemas
    from ingest.spark_job import decode_batch, decoded, kafka_batch
    from zync import kafka_client
    from zync.wire import Registry

    registry = Registry(target.schema_registry)
    schemas = WriterSchemas(spark, registry)
    key = [schemas.writer(i) for i in schemas.subject_ids(f"{topic}-key")]
    value = [schemas.writer(i) for i in schemas.subject_ids(f"{topic}-value")]
    highs = kafka_client.high_water_marks(target, topic)
    ranges = {p: (0, high) for p, high in highs.items()}
    assert sum(highs.values()) == expect
    options = spark_options(target.kafka)

    def envelope_only():
        raw = kafka_batch(spark, options, topic, ranges, key, value)
        return raw.select("kafka", "k", "v")

    def read_only():
        raw = kafka_batch(spark, options, topic, ranges, [], [])
        return raw.select(F.col("kafka.topic"), F.col("kafka.partition"), F.col("kafka.offset"), "k", "v")

    def avro_only():  # the writer's own types: no conversion to the table's
        raw = kafka_batch(spark, options, topic, ranges, key, value)
        return raw.select("kafka", decoded(F.col("k"), key, key[-1].spark_type, "key").alias("key"),
                          decoded(F.col("v"), value, value[-1].spark_type, "value").alias("value"))

    def converted():
        raw = kafka_batch(spark, options, topic, ranges, key, value)
        # The table's types as a table that already exists has them: Delta's, read back from the warm-up's table.
        table = spark.read.format("delta").load(str(TABLES / "warm-up")).schema
        return decode_batch(raw, key, value, table["key"].dataType, table["value"].dataType)

    from ingest.table import PARQUET_SETTINGS

    stats = {"spark.databricks.delta.properties.defaults.dataSkippingStatsColumns": "kafka,key", **PARQUET_SETTINGS}
    steps: list[tuple[str, Callable, str, dict[str, str]]] = [
        ("kafka read (noop sink)", read_only, "noop", {}),
        ("+ header match -> kafka envelope", envelope_only, "noop", {}),
        ("+ from_avro (writer types)", avro_only, "noop", {}),
        ("+ conversion to an existing table's types", converted, "noop", {}),
        ("from_avro + Parquet, Spark's defaults (snappy, dict.)", avro_only, "parquet", {}),
        ("from_avro + Parquet, the raw table's (zstd, no dict.)", avro_only, "parquet", dict(PARQUET_SETTINGS)),
        ("from_avro + Delta write, stats kafka,key", avro_only, "delta", stats),
        ("from_avro + Delta write, Delta's default stats", avro_only, "delta", dict(PARQUET_SETTINGS)),
    ]
    seconds: dict[str, float] = {}
    for i, (label, frame_of, sink, settings) in enumerate(steps):
        out = scratch / f"step-{i}"
        shutil.rmtree(out, ignore_errors=True)
        frame = frame_of()
        with session_conf(spark, settings):
            started = time.monotonic()
            writer = frame.write.format(sink).mode("overwrite")
            if sink == "noop":
                writer.save()
            else:
                writer.save(str(out))
            seconds[label] = time.monotonic() - started
        shutil.rmtree(out, ignore_errors=True)
        print(f"  {label:54s} {seconds[label]:6.2f} s", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each design, alternating")
    parser.add_argument("--variants", default="", help=f"comma-separated, of: {', '.join(VARIANTS)}")
    parser.add_argument("--cases", default="fresh,existing",
                        help="fresh: each run's batch creates its table; existing: the table exists (empty, the "
                             "warm-up's schema and properties), as in zync run's later cycles")
    parser.add_argument("--phases", action="store_true", help="also the per-phase breakdown of one batch")
    parser.add_argument("--keep-services", action="store_true", help="leave the bench's Kafka and registry up")
    args = parser.parse_args()
    designs = ["default", *[v for v in args.variants.split(",") if v and v != "default"]]
    unknown = [d for d in designs if d not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants: {', '.join(unknown)} (known: {', '.join(VARIANTS)})")

    from stack import services
    from zync.config import load_target
    from zync.spark import spark_session

    OUT.mkdir(parents=True, exist_ok=True)
    target = load_target("local")
    for line in services.up(target):
        print(line)
    results: dict = {"machine": f"{os.cpu_count()} cores (load avg {os.getloadavg()[0]:.1f} at start)"}
    try:
        topic = f"bench_ingest_{args.records}"
        results["topic"] = {"name": topic, **build_topic(target, topic, args.records, args.partitions)}
        print(f"topic {topic}: {args.records:,} events ready", flush=True)
        began = time.monotonic()
        spark = spark_session(target)
        results["session_start_s"] = time.monotonic() - began
        warm = warm_ingest(spark, target, topic, "warm-up", args.records, {})
        results["warm_up"] = warm
        print(f"session {results['session_start_s']:.1f} s; warm-up ingest {warm['seconds']:.1f} s "
              f"({warm['records_per_s']:,.0f} records/s, first in this JVM)", flush=True)
        reference = fingerprint(spark, warm["location"])
        cases = [c for c in args.cases.split(",") if c]
        runs: dict[str, list[dict]] = {f"{d} {c}": [] for c in cases for d in designs}
        for attempt in range(args.repeat):
            for case in cases:
                for design in designs:
                    like = warm["location"] if case == "existing" else None
                    run = warm_ingest(spark, target, topic, design, args.records, VARIANTS[design], like)
                    began_scan = time.monotonic()
                    got = fingerprint(spark, run["location"])
                    run["scan_s"] = time.monotonic() - began_scan  # what a reader of the whole table pays
                    assert got == reference, f"{design} {case}: contents differ from the default's: {got} vs {reference}"
                    runs[f"{design} {case}"].append(run)
                    print(f"{design:14s} {case:8s} run {attempt + 1}: {run['seconds']:6.2f} s = "
                          f"{run['records_per_s']:>9,.0f} records/s; {run['spark_jobs']} jobs, {run['stages']} stages, "
                          f"{run['jobs_seconds']:.2f} s in jobs, {run['driver_outside_jobs_s']:.2f} s outside; "
                          f"{run['files']} files, {run['bytes'] / 2**20:,.0f} MB; full scan {run['scan_s']:.2f} s",
                          flush=True)
        results["runs"] = runs
        if args.phases:
            print("phases, the same 1 batch (each a Spark job of its own):", flush=True)
            results["phases_s"] = phases(spark, target, topic, args.records, OUT / "warm-phases")
        results["load_avg_at_end"] = os.getloadavg()[0]
    finally:
        if not args.keep_services:
            services.down(target)
    (OUT / "ingest_warm.json").write_text(json.dumps(results, indent=2))
    print(f"\n{results['machine']}; load avg at end {results.get('load_avg_at_end', 0):.1f}")
    for design, design_runs in results.get("runs", {}).items():
        best = min(design_runs, key=lambda r: r["seconds"])
        times = ", ".join(f"{r['seconds']:.2f}" for r in design_runs)
        print(f"warm in-process, {design:23s} best {best['seconds']:6.2f} s = {best['records_per_s']:>9,.0f} "
              f"records/s  (runs {times} s)")


if __name__ == "__main__":
    main()
