"""Benchmark: one incremental mirror run vs rebuilding the mirror from the whole raw history.

    .venv/bin/python bench/mirror_merge.py [--cases 10000x1000000,10000x10000000,100000x1000000]
        [--designs zync-run,dbt-run,dbt-run-no-key-filter,rebuild,zync-run-s3] [--repeat 2] [--reuse]

Each case CHANGESxROWS: a raw Debezium table in the shape `zync from-kafka`
writes holds ROWS snapshot reads (op r), then CHANGES more records (70%
updates and 10% deletes of distinct existing keys spread over the whole key
space, 20% inserts of new keys after the largest, as a database's sequence
gives them) in a mixed offset order. A scratch dbt project holds two copies
of the same hard-delete mirror of it: `bench_mirror_<ROWS>`, built from the
snapshot, then brought back to that state (RESTORE) before each incremental
run, and `bench_mirror_<ROWS>_rebuild`. Designs, alternated `--repeat` times,
every run's time printed:
- zync-run: ONE incremental run as `zync run` runs it: in-process on the warm
  Spark session, the manifest parsed once (service/project.py), no dbt start-up;
- dbt-run: the same run as a `dbt run --select` invocation (in-process: dbt's
  start-up and partial parse, no JVM start);
- dbt-run-no-key-filter: dbt-run with the MERGE's target-side key filter off
  (`--vars '{zync_mirror_key_filter_rows: 0}'`: the MERGE before it);
- rebuild (the anchor): `dbt run --full-refresh` of the rebuild copy: the
  mirror recomputed from all ROWS + CHANGES raw records;
- zync-run-s3 (not in the default): zync-run on a second copy of the raw
  table and mirror kept on an S3 server the benchmark starts (S3Proxy over a
  folder of the state folder, loopback, `zync up --s3`; docs/object-storage.md),
  in a database of their own (zync_s3) and a scratch project of their own,
  on the same Spark session; the same snapshot, changes and checks.
After every run the mirror's contents are asserted identical to the rebuild's
(row count, and the sum of a 64-bit hash of every row). Each incremental run's
Spark SQL statements are timed in-process (the slowest printed) with the
MERGE's own metrics (Delta's scan and rewrite times), to show where the time
goes. JSON to bench/out/mirror_merge.json.
--reuse keeps the raw tables and mirrors between invocations (a 10,000,000-row
snapshot and its first build take minutes on 2 cores): the raw table is
restored to its snapshot (version 0) and the case's changes appended again.
Runs on its own state folder (bench/out/state) and catalog (port $BENCH_CATALOG_PORT, default 26527;
the S3 server's: $BENCH_S3_PORT, default 26590).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
os.environ.setdefault("ZYNC_STATE_DIR", str(OUT / "state"))
os.environ.setdefault("ZYNC_TARGET", "local")
os.environ.setdefault("ZYNC_CATALOG_PORT", os.environ.get("BENCH_CATALOG_PORT", "26527"))
os.environ.setdefault("ZYNC_S3_PORT", os.environ.get("BENCH_S3_PORT", "26590"))
os.environ["ZYNC_PROJECT_DIR"] = str(ROOT)
sys.path.insert(0, str(ROOT))

from zync.tables import MIRROR_BASE_SUFFIX  # noqa: E402 - after the path
from testkit.scratch import drop_relation  # noqa: E402

TOPIC = "BenchAccounts"
AFTER_TYPE = "struct<ID:bigint,name:string,balance:bigint,city:string>"
# Bijections of 0..n-1 (multipliers coprime with n) spread keys and offsets without a shuffle.
KEY_STEP, OFFSET_STEP = 7919, 48271
DEFAULT_DESIGNS = ("zync-run", "dbt-run", "dbt-run-no-key-filter", "rebuild")
DESIGNS = (*DEFAULT_DESIGNS, "zync-run-s3")
SCHEMA = "zync"
S3_SCHEMA = "zync_s3"  # zync-run-s3's tables: a database on the S3 server
IMAGE = "named_struct('ID', {k}, 'name', concat('{p}', {k}), 'balance', ({k} * 37 + {s}) % 10000, 'city', concat('city-', {k} % 97))"


def raw_name(rows: int) -> str:
    return f"bench_raw_accounts_{rows}"


def mirror_name(rows: int) -> str:
    return f"bench_mirror_{rows}"


def mirrors_yaml(row_counts: list[int]) -> str:
    lines = ["mirrors:"]
    for rows in row_counts:
        for model in (mirror_name(rows), mirror_name(rows) + "_rebuild"):
            lines += [f"  - model: {model}", f"    topic: {TOPIC}", f"    table: {raw_name(rows)}"]
    return "\n".join(lines) + "\n"


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


def write_snapshot(spark, rows: int, schema: str = SCHEMA, table: str | None = None) -> None:
    """ROWS snapshot reads, offsets 0..ROWS-1, ordered by offset (as ingest batches would be): version 0
    of the raw table `table` (default raw_name(rows))."""
    table = table or raw_name(rows)
    spark.sql(f"create schema if not exists {schema}")
    spark.sql(f"drop table if exists {schema}.{table}")
    snapshot = raw_rows(spark, f"range(0, {rows}, 1, {max(8, rows // 1_000_000)})", "'r'", "id", "id",
                        IMAGE.format(k="id", p="name-", s=0), f"cast(null as {AFTER_TYPE})")
    snapshot.write.format("delta").saveAsTable(f"{schema}.{table}")


def append_changes(spark, rows: int, changes: int, schema: str = SCHEMA, table: str | None = None) -> dict[str, int]:
    """CHANGES records after the snapshot: 70% updates, 10% deletes (distinct existing keys), 20% inserts."""
    updates, inserts = int(changes * 0.7), int(changes * 0.2)
    deletes = changes - updates - inserts
    key = f"(id * {KEY_STEP} + 13) % {rows}"  # distinct existing keys over the whole key space
    offset = f"{rows} + (id * {OFFSET_STEP}) % {changes}"
    change_sql = f"case when id < {updates} then 'u' when id < {updates + deletes} then 'd' else 'c' end"
    key_sql = f"case when id < {updates + deletes} then {key} else {rows} + id end"
    after = f"case when id < {updates} or id >= {updates + deletes} then {IMAGE.format(k=key_sql, p='changed-', s=1)} end"
    before = f"case when id < {updates + deletes} then {IMAGE.format(k=key_sql, p='name-', s=0)} end"
    batch = raw_rows(spark, f"range(0, {changes}, 1, 2)", change_sql, key_sql, offset, after, before)
    batch.write.format("delta").mode("append").saveAsTable(f"{schema}.{table or raw_name(rows)}")
    return {"updates": updates, "inserts": inserts, "deletes": deletes}


class StatementClock:
    """Times every SparkSession.sql call of this process (dbt-spark's session method goes through it)."""

    def __init__(self):
        from pyspark.sql import SparkSession

        self.calls: list[tuple[str, float]] = []
        self.on = False
        original = SparkSession.sql

        def timed(session, query, *args, **kwargs):
            started = time.perf_counter()
            try:
                return original(session, query, *args, **kwargs)
            finally:
                if self.on:
                    text = " ".join(str(query).split())
                    text = text[text.find("*/") + 3:] if text.startswith("/*") else text
                    self.calls.append((text[:90], time.perf_counter() - started))

        SparkSession.sql = timed

    def start(self) -> None:
        self.calls, self.on = [], True

    def take(self) -> list[tuple[str, float]]:
        self.on = False
        calls, self.calls = self.calls, []
        return calls


MERGE_METRICS = ("executionTimeMs", "scanTimeMs", "rewriteTimeMs", "numSourceRows", "numTargetRowsUpdated",
                 "numTargetRowsInserted", "numTargetRowsDeleted", "numTargetFilesAfterSkipping",
                 "numTargetFilesBeforeSkipping", "numTargetFilesAdded", "numTargetFilesRemoved",
                 "numTargetDeletionVectorsAdded", "numTargetDeletionVectorsUpdated")


def run_profile(seconds: float, statements: list[tuple[str, float]], metrics: dict) -> dict:
    """One incremental run's profile: its Spark SQL statements' times (StatementClock) and its MERGE's metrics."""
    return {
        "seconds": round(seconds, 2),
        "spark_sql_seconds": round(sum(s for _, s in statements), 2),
        "statements": len(statements),
        "slowest": [(text, round(s, 2)) for text, s in sorted(statements, key=lambda c: -c[1])[:6]],
        "every_statement": [(text[:60], round(s, 3)) for text, s in statements],
        "merge_metrics": {k: metrics.get(k) for k in MERGE_METRICS},
    }


class OnS3:
    """zync-run-s3's side: its scratch project, parsed and run with ZYNC_SCHEMA naming the database on
    the S3 server (dbt reads the target's schema from it), as `zync run` with that setting would."""

    def __init__(self, project: Path):
        from service.project import DbtProject

        self.project = project
        with self.schema():
            self.service = DbtProject(project, "local")
            self.service.parse()

    class schema:
        def __enter__(self):
            self.before = os.environ.get("ZYNC_SCHEMA")
            os.environ["ZYNC_SCHEMA"] = S3_SCHEMA

        def __exit__(self, *_):
            if self.before is None:
                os.environ.pop("ZYNC_SCHEMA", None)
            else:
                os.environ["ZYNC_SCHEMA"] = self.before


class Bench:
    def __init__(self, spark, project: Path, clock: StatementClock, on_s3: OnS3 | None = None):
        from service.project import DbtProject

        self.spark, self.project, self.clock = spark, project, clock
        self.service = DbtProject(project, "local")  # as `zync run` holds it: parsed once
        self.service.parse()
        self.on_s3 = on_s3

    def dbt(self, *args: str) -> float:
        from dbt.cli.main import dbtRunner

        os.chdir(self.project)
        started = time.perf_counter()
        result = dbtRunner().invoke([*args, "--quiet", "--project-dir", str(self.project),
                                     "--profiles-dir", str(ROOT / "profiles")])
        elapsed = time.perf_counter() - started
        if not result.success:
            raise SystemExit(f"dbt {' '.join(args)} failed: {result.exception or result.result}")
        return elapsed

    def zync_run(self, model: str, schema: str = SCHEMA) -> float:
        if schema == S3_SCHEMA:
            with self.on_s3.schema():
                started = time.perf_counter()
                ran = self.on_s3.service.run([model])
                elapsed = time.perf_counter() - started
        else:
            started = time.perf_counter()
            ran = self.service.run([model])
            elapsed = time.perf_counter() - started
        if not all(r.ok for r in ran):
            raise SystemExit(f"zync run of {model} failed: {ran}")
        return elapsed

    def history(self, table: str, schema: str = SCHEMA):
        return self.spark.sql(f"describe history {schema}.{table}").orderBy("version", ascending=False)

    def fingerprint(self, table: str, columns: list[str], schema: str = SCHEMA) -> tuple[int, str]:
        names = ", ".join(f"`{c}`" for c in columns)
        row = self.spark.sql(f"select count(*), cast(sum(cast(xxhash64({names}) as decimal(38, 0))) as string) "
                             f"from {schema}.{table}").first()
        return row[0], row[1]

    def restore_build(self, table: str, schema: str = SCHEMA) -> None:
        """A table a model's first run built back to that build (version 0); the RESTORE carries version 0's
        cursor, as the build did, so that the run reads it from the newest commit however long the table's
        Delta history has grown."""
        if self.history(table, schema).first()["version"] == 0:
            return
        built = self.spark.sql(f"describe history {schema}.{table}").where("version = 0").first()["userMetadata"]
        self.spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", built)
        try:
            self.spark.sql(f"restore table {schema}.{table} to version as of 0")
        finally:
            self.spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")

    def reset_mirror(self, rows: int, schema: str = SCHEMA) -> None:
        """The mirror back to its snapshot build (version 0)."""
        self.restore_build(mirror_name(rows) + MIRROR_BASE_SUFFIX, schema)  # its name is a view over this base

    def prepare(self, rows: int, changes: int, reuse: bool, schema: str = SCHEMA) -> dict:
        """The raw table at its snapshot plus this case's changes; the mirror at its snapshot build."""
        raw, mirror = raw_name(rows), mirror_name(rows)
        tables = ({t.name for t in self.spark.catalog.listTables(schema)}
                  if self.spark.catalog.databaseExists(schema) else set())
        started = time.perf_counter()
        fresh = not (reuse and raw in tables and mirror in tables
                     and self.spark.sql(f"select count(*) from {schema}.{raw} version as of 0").first()[0] == rows)
        if fresh:
            drop_relation(self.spark, f"{schema}.{mirror}")
            write_snapshot(self.spark, rows, schema)
            self.zync_run(mirror, schema)  # first run: built from the snapshot (version 0)
        else:
            self.spark.sql(f"restore table {schema}.{raw} to version as of 0")
            self.reset_mirror(rows, schema)
        mix = append_changes(self.spark, rows, changes, schema)
        return {**mix, "prepared_fresh": fresh, "prepare_seconds": round(time.perf_counter() - started, 1)}

    def run_case(self, rows: int, changes: int, designs: list[str], repeat: int, reuse: bool) -> dict:
        mirror, rebuild = mirror_name(rows), mirror_name(rows) + "_rebuild"
        case = {"rows": rows, "changes": changes, **self.prepare(rows, changes, reuse)}
        print(f"\n{changes:,} changes into {rows:,} rows ({case['updates']:,} updates, {case['inserts']:,} inserts, "
              f"{case['deletes']:,} deletes); prepared in {case['prepare_seconds']} s", flush=True)
        if "zync-run-s3" in designs:
            on_s3 = self.prepare(rows, changes, reuse, S3_SCHEMA)
            case["s3_prepared_fresh"], case["s3_prepare_seconds"] = on_s3["prepared_fresh"], on_s3["prepare_seconds"]
            print(f"  the same on the S3 server: prepared in {on_s3['prepare_seconds']} s", flush=True)
        if "rebuild" not in designs:  # the reference contents all the same
            self.dbt("run", "--select", rebuild, "--full-refresh")
        expected = None
        runs: dict[str, list[float]] = {d: [] for d in designs}
        profiles: dict[str, list] = {d: [] for d in designs if d != "rebuild"}
        loads = []
        for attempt in range(repeat):
            for design in designs:
                loads.append(round(os.getloadavg()[0], 1))
                if design == "rebuild":
                    seconds = self.dbt("run", "--select", rebuild, "--full-refresh")
                    columns = self.spark.table(f"zync.{rebuild}").columns
                    expected = self.fingerprint(rebuild, columns)
                    runs[design].append(round(seconds, 2))
                    print(f"  {design:24s} run {attempt + 1}: {seconds:6.2f} s", flush=True)
                    continue
                schema = S3_SCHEMA if design == "zync-run-s3" else SCHEMA
                self.reset_mirror(rows, schema)
                self.clock.start()
                if design == "zync-run":
                    seconds = self.zync_run(mirror)
                elif design == "zync-run-s3":
                    seconds = self.zync_run(mirror, S3_SCHEMA)
                elif design == "dbt-run":
                    seconds = self.dbt("run", "--select", mirror)
                else:
                    seconds = self.dbt("run", "--select", mirror, "--vars", "{zync_mirror_key_filter_rows: 0}")
                statements = self.clock.take()
                merge = self.history(mirror + MIRROR_BASE_SUFFIX, schema).first()
                metrics = dict(merge["operationMetrics"] or {})
                runs[design].append(round(seconds, 2))
                profiles[design].append(run_profile(seconds, statements, metrics))
                assert merge["operation"] == "MERGE", f"the run's last commit is a {merge['operation']}"
                print(f"  {design:24s} run {attempt + 1}: {seconds:6.2f} s (Spark SQL {profiles[design][-1]['spark_sql_seconds']} s "
                      f"in {len(statements)} statements; MERGE {metrics.get('executionTimeMs')} ms: scan "
                      f"{metrics.get('scanTimeMs')}, rewrite {metrics.get('rewriteTimeMs')})", flush=True)
                if expected is None:
                    self.dbt("run", "--select", rebuild, "--full-refresh")
                    expected = self.fingerprint(rebuild, self.spark.table(f"zync.{rebuild}").columns)
                got = self.fingerprint(mirror, self.spark.table(f"zync.{rebuild}").columns, schema)
                assert got == expected, f"{design}: contents differ from the rebuild: {got} != {expected}"
        expected_rows = rows + case["inserts"] - case["deletes"]
        assert expected[0] == expected_rows, f"{expected[0]} rows, expected {expected_rows}"
        best = {d: min(r) for d, r in runs.items()}
        case.update({
            "runs_seconds": runs, "best_seconds": best, "load_average_before_each": loads,
            "identical_contents": True, "mirror_rows_after": expected[0], "profiles": profiles,
        })
        if "rebuild" in best:
            case["rebuild_over"] = {d: round(best["rebuild"] / s, 1) for d, s in best.items() if d != "rebuild"}
        if "zync-run" in best and "zync-run-s3" in best:
            case["s3_over_local"] = {
                "best": round(best["zync-run-s3"] / best["zync-run"], 2),
                "median": round(statistics.median(runs["zync-run-s3"]) / statistics.median(runs["zync-run"]), 2)}
            print(f"  zync-run on the S3 server / on local disk: best {case['s3_over_local']['best']}x, "
                  f"median {case['s3_over_local']['median']}x", flush=True)
        for design, profile in profiles.items():
            quickest = min(profile, key=lambda p: p["seconds"])
            print(f"  {design}: best run's slowest statements: "
                  + "; ".join(f"{s} s {t[:60]!r}" for t, s in quickest["slowest"][:4]))
            print(f"    MERGE: {quickest['merge_metrics']}")
        if "rebuild" in best:
            print(f"  rebuild / incremental (best runs): {case['rebuild_over']}; contents identical "
                  f"({expected[0]:,} rows)", flush=True)
        return case


def start_engine(on_s3: bool = False):
    """The benchmark's own catalog (and S3 server) on its own ports, stopped at exit, and its Spark session."""
    from stack import services
    from zync.config import load_target
    from zync.spark import spark_session

    OUT.mkdir(parents=True, exist_ok=True)
    if on_s3:  # the S3 server's endpoint and credentials for this process's Spark; the warehouse stays local
        from stack import s3

        os.environ.update({k: v for k, v in s3.environment().items() if k != "ZYNC_WAREHOUSE"})
    target = load_target("local")
    own = {"catalog", "s3"} if on_s3 else {"catalog"}
    services.up(target, only=own, object_store=on_s3)
    atexit.register(services.down, target, own)
    return spark_session(target)


def scratch_project(folder: Path, transforms: dict[str, str]) -> Path:
    """A scratch dbt project of the transform files {name: YAML}, with the repository's profiles."""
    from testkit.scratch import make_scratch_project

    project = make_scratch_project(folder, transforms).path
    (project / "profiles").symlink_to(ROOT / "profiles", target_is_directory=True)
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="10000x1000000,10000x10000000,100000x1000000",
                        help="CHANGESxROWS, comma-separated (default: %(default)s)")
    parser.add_argument("--designs", default=",".join(DEFAULT_DESIGNS),
                        help=f"of {', '.join(DESIGNS)} (default: all but zync-run-s3)")
    parser.add_argument("--repeat", type=int, default=2, help="measure each design this many times, alternating")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the raw tables and mirrors of an earlier invocation (same state folder)")
    args = parser.parse_args()
    cases = [tuple(int(n) for n in case.lower().split("x")) for case in args.cases.split(",")]
    designs = [d.strip() for d in args.designs.split(",")]
    unknown = set(designs) - set(DESIGNS)
    if unknown:
        parser.error(f"unknown design(s) {', '.join(sorted(unknown))}: choose from {', '.join(DESIGNS)}")

    on_s3 = "zync-run-s3" in designs
    spark = start_engine(on_s3)
    row_counts = sorted({rows for _, rows in cases})
    project = scratch_project(OUT / "project", {"bench_mirrors.yml": mirrors_yaml(row_counts)})
    clock = StatementClock()
    s3_side = None
    if on_s3:
        from stack import s3

        spark.sql(f"create schema if not exists {S3_SCHEMA} location '{s3.warehouse()}/{S3_SCHEMA}.db'")
        s3_side = OnS3(scratch_project(OUT / "project-s3", {"bench_mirrors.yml": mirrors_yaml(row_counts)}))
    bench = Bench(spark, project, clock, s3_side)
    results = []
    for rows in row_counts:  # a row count's cases together: one snapshot each
        for changes, case_rows in cases:
            if case_rows == rows:
                results.append(bench.run_case(rows, changes, designs, args.repeat, args.reuse))
    figures = {
        "cases": results, "designs": designs, "repeat": args.repeat,
        "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end",
    }
    (OUT / "mirror_merge.json").write_text(json.dumps(figures, indent=2) + "\n")
    print("\ncase                     " + "".join(f"{d:>24s}" for d in designs))
    for case in results:
        print(f"{case['changes']:>9,} x {case['rows']:>11,}  "
              + "".join(f"{', '.join(f'{s:.1f}' for s in case['runs_seconds'][d]):>24s}" for d in designs))
    print(f"machine: {figures['machine']}; JSON: {OUT / 'mirror_merge.json'}")
    spark.stop()


if __name__ == "__main__":
    main()
