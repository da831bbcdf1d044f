"""Benchmark: one incremental run of a history model (`history: true`) by the size of the history it adds to.

    .venv/bin/python bench/history_merge.py [--cases 10000x100000,10000x10000000]
        [--designs zync-run,dbt-run,rebuild] [--repeat 2] [--rebuild-max-rows 10000000] [--reuse]

Each case CHANGESxROWS: a raw Debezium table in the shape `zync from-kafka`
writes (bench/mirror_merge.py's: ROWS snapshot reads, then CHANGES records,
70% updates and 10% deletes of distinct keys spread over the whole key
space, 20% inserts of new keys, in a mixed offset order). A scratch dbt
project holds two mirror entries over it with `history: true`; of each only
the history model runs. `bench_hmirror_<ROWS>_history`: built once from the
snapshot (ROWS versions, one per key), brought back to that build (RESTORE,
its cursor with it) before each incremental run. Its copy
`bench_hmirror_<ROWS>_rebuild_history`: the anchor. Designs, alternated
`--repeat` times over every case, every run printed:
- zync-run: ONE incremental run as `zync run` runs it: in-process on the warm
  Spark session, the manifest parsed once (service/project.py);
- dbt-run: the same as an in-process `dbt run --select` invocation;
- dbt-run-no-key-filter (not in the default): dbt-run with the key filter on
  the history's side off (`--vars '{zync_mirror_key_filter_rows: 0}'`);
- rebuild (the anchor): `dbt run --full-refresh` of the copy, the history
  made again from all ROWS + CHANGES raw records; timed in the cases of at
  most --rebuild-max-rows rows; a larger case's rebuild runs once, untimed,
  for its expected contents (kept in bench/out with --reuse).
After every incremental run the history is asserted to be its case's
rebuild (row count and the sum of a 64-bit hash of every row), to hold one
version per snapshot key, per update and per insert (a delete closes its
key's version, hard_deletes: invalidate), one current version per live key.
Every Spark SQL statement of a run is timed in-process (the slowest
printed), with the MERGE's own metrics. JSON to bench/out/history_merge.json.
--reuse keeps the raw tables and built histories of an earlier invocation:
the raw table is restored to its snapshot and the changes appended again.
Runs on bench/mirror_merge.py's state folder and catalog.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.mirror_merge import (OUT, SCHEMA, TOPIC, Bench, StatementClock, append_changes,  # noqa: E402
                                run_profile, scratch_project, start_engine, write_snapshot)
from compiler.mirrors import history_model_name  # noqa: E402

DEFAULT_DESIGNS = ("zync-run", "dbt-run", "rebuild")
DESIGNS = (*DEFAULT_DESIGNS, "dbt-run-no-key-filter")
EXPECTED = OUT / "history_merge_expected.json"  # --reuse: a large case's rebuilt contents, per case


def raw_name(rows: int) -> str:
    return f"bench_raw_history_{rows}"


def history_name(rows: int, rebuild: bool = False) -> str:
    return history_model_name(f"bench_hmirror_{rows}" + ("_rebuild" if rebuild else ""))


def mirrors_yaml(row_counts: list[int]) -> str:
    lines = ["mirrors:"]
    for rows in row_counts:
        for model in (f"bench_hmirror_{rows}", f"bench_hmirror_{rows}_rebuild"):
            lines += [f"  - model: {model}", f"    topic: {TOPIC}", f"    table: {raw_name(rows)}",
                      "    history: true"]
    return "\n".join(lines) + "\n"


class HistoryBench(Bench):
    def prepare(self, rows: int, changes: int, reuse: bool) -> dict:
        """The raw table at its snapshot plus this case's changes; the history at its snapshot build."""
        raw, history = raw_name(rows), history_name(rows)
        tables = {t.name for t in self.spark.catalog.listTables(SCHEMA)} if self.spark.catalog.databaseExists(
            SCHEMA) else set()
        started = time.perf_counter()
        fresh = not (reuse and raw in tables and history in tables
                     and self.spark.sql(f"select count(*) from {SCHEMA}.{raw} version as of 0").first()[0] == rows)
        built = None
        if fresh:
            self.spark.sql(f"drop table if exists {SCHEMA}.{history}")
            write_snapshot(self.spark, rows, table=raw)
            built = round(self.zync_run(history), 1)  # first run: built from the snapshot (version 0)
            print(f"  {rows:,}-row snapshot written, its history built in {built} s", flush=True)
        else:
            self.spark.sql(f"restore table {SCHEMA}.{raw} to version as of 0")
            self.restore_build(history)
        mix = append_changes(self.spark, rows, changes, table=raw)
        return {**mix, "prepared_fresh": fresh, "build_seconds": built,
                "prepare_seconds": round(time.perf_counter() - started, 1)}

    def columns(self, rows: int) -> list[str]:
        return self.spark.table(f"{SCHEMA}.{history_name(rows, rebuild=True)}").columns

    def rebuild(self, rows: int) -> tuple[float, tuple[int, str]]:
        seconds = self.dbt("run", "--select", history_name(rows, rebuild=True), "--full-refresh")
        return seconds, self.fingerprint(history_name(rows, rebuild=True), self.columns(rows))

    def expected(self, case: dict, reuse: bool) -> tuple[int, str]:
        """The rebuilt history's fingerprint, from a rebuild (or, with --reuse, an earlier one's record)."""
        name = f"{case['changes']}x{case['rows']}"
        kept = json.loads(EXPECTED.read_text()) if EXPECTED.exists() else {}
        if reuse and name in kept:
            return tuple(kept[name])
        seconds, expected = self.rebuild(case["rows"])
        print(f"  {name}: rebuilt once for its expected contents in {seconds:.1f} s", flush=True)
        EXPECTED.write_text(json.dumps({**kept, name: list(expected)}, indent=2) + "\n")
        return expected

    def check(self, case: dict, design: str, expected: tuple[int, str]) -> None:
        rows, history = case["rows"], history_name(case["rows"])
        got = self.fingerprint(history, self.columns(rows))
        assert got == expected, f"{design}, {case['changes']}x{rows}: the history differs from a rebuild: {got} != {expected}"
        versions, current, keys, most = self.spark.sql(f"""
            select count(*), count_if(is_current), count(distinct ID), max(currents) from (
                select ID, is_current, count_if(is_current) over (partition by ID) as currents
                from {SCHEMA}.{history})""").first()
        want = (rows + case["updates"] + case["inserts"], rows + case["inserts"] - case["deletes"],
                rows + case["inserts"], 1)
        assert (versions, current, keys, most) == want, (
            f"{design}, {case['changes']}x{rows}: (versions, current versions, keys, most current versions of a key) "
            f"{(versions, current, keys, most)}, expected {want}")

    def incremental(self, case: dict, design: str) -> dict:
        history = history_name(case["rows"])
        self.restore_build(history)
        self.clock.start()
        if design == "zync-run":
            seconds = self.zync_run(history)
        elif design == "dbt-run":
            seconds = self.dbt("run", "--select", history)
        else:
            seconds = self.dbt("run", "--select", history, "--vars", "{zync_mirror_key_filter_rows: 0}")
        statements = self.clock.take()
        merge = self.history(history).first()
        assert merge["operation"] == "MERGE", f"the run's last commit is a {merge['operation']}"
        return run_profile(seconds, statements, dict(merge["operationMetrics"] or {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="10000x100000,10000x10000000",
                        help="CHANGESxROWS, comma-separated (default: %(default)s)")
    parser.add_argument("--designs", default=",".join(DEFAULT_DESIGNS),
                        help=f"of {', '.join(DESIGNS)} (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=2, help="measure each design this many times, alternating")
    parser.add_argument("--rebuild-max-rows", type=int, default=10_000_000,
                        help="time the rebuild only in cases of at most this many rows (default: %(default)s)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the raw tables and histories of an earlier invocation (same state folder)")
    args = parser.parse_args()
    cases = [dict(zip(("changes", "rows"), (int(n) for n in case.lower().split("x")))) for case in args.cases.split(",")]
    designs = [d.strip() for d in args.designs.split(",")]
    unknown = set(designs) - set(DESIGNS)
    if unknown:
        parser.error(f"unknown design(s) {', '.join(sorted(unknown))}: choose from {', '.join(DESIGNS)}")
    if len({c["rows"] for c in cases}) != len(cases):
        parser.error("one case per row count: a row count's raw table holds one case's changes")

    spark = start_engine()
    project = scratch_project(OUT / "project-history", {"bench_histories.yml": mirrors_yaml([c["rows"] for c in cases])})
    bench = HistoryBench(spark, project, StatementClock())
    for case in cases:
        case.update(bench.prepare(case["rows"], case["changes"], args.reuse))
        print(f"{case['changes']:,} changes into a history of {case['rows']:,} rows ({case['updates']:,} updates, "
              f"{case['inserts']:,} inserts, {case['deletes']:,} deletes); prepared in {case['prepare_seconds']} s",
              flush=True)
        timed = "rebuild" in designs and case["rows"] <= args.rebuild_max_rows
        case.update(designs=[d for d in designs if d != "rebuild" or timed],
                    runs_seconds={d: [] for d in designs if d != "rebuild" or timed}, profiles={},
                    expected=None if timed else bench.expected(case, args.reuse))
    loads = []
    for attempt in range(args.repeat):  # every case's designs in turn, then again
        for case in cases:
            for design in case["designs"]:
                loads.append(round(os.getloadavg()[0], 1))
                label = f"{case['changes']:,} x {case['rows']:,} {design}"
                if design == "rebuild":
                    seconds, case["expected"] = bench.rebuild(case["rows"])
                    case["runs_seconds"][design].append(round(seconds, 2))
                    print(f"  {label:36s} run {attempt + 1}: {seconds:6.2f} s", flush=True)
                    continue
                profile = bench.incremental(case, design)
                case["runs_seconds"][design].append(profile["seconds"])
                case["profiles"].setdefault(design, []).append(profile)
                merge = profile["merge_metrics"]
                print(f"  {label:36s} run {attempt + 1}: {profile['seconds']:6.2f} s (Spark SQL "
                      f"{profile['spark_sql_seconds']} s in {profile['statements']} statements; MERGE "
                      f"{merge['executionTimeMs']} ms: scan {merge['scanTimeMs']}, rewrite {merge['rewriteTimeMs']}; "
                      f"files {merge['numTargetFilesAfterSkipping']}/{merge['numTargetFilesBeforeSkipping']} read, "
                      f"{merge['numTargetFilesRemoved']} rewritten)", flush=True)
                if case["expected"] is None:
                    case["expected"] = bench.rebuild(case["rows"])[1]
                bench.check(case, design, case["expected"])
    for case in cases:
        case["best_seconds"] = {d: min(r) for d, r in case["runs_seconds"].items()}
        case["median_seconds"] = {d: statistics.median(r) for d, r in case["runs_seconds"].items()}
        for design, profile in case["profiles"].items():
            quickest = min(profile, key=lambda p: p["seconds"])
            print(f"{case['changes']:,} x {case['rows']:,} {design}: best run's slowest statements: "
                  + "; ".join(f"{s} s {t[:70]!r}" for t, s in quickest["slowest"][:5]))
            print(f"    MERGE: {quickest['merge_metrics']}")
    small, large = min(cases, key=lambda c: c["rows"]), max(cases, key=lambda c: c["rows"])
    ratios = {d: round(large["best_seconds"][d] / small["best_seconds"][d], 2)
              for d in designs if d != "rebuild" and d in large["best_seconds"]}
    figures = {"cases": cases, "designs": designs, "repeat": args.repeat, "load_average_before_each": loads,
               "large_over_small": ratios,
               "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end"}
    (OUT / "history_merge.json").write_text(json.dumps(figures, indent=2, default=list) + "\n")
    print("\ncase                         " + "".join(f"{d:>24s}" for d in designs))
    for case in cases:
        print(f"{case['changes']:>9,} x {case['rows']:>11,}      " + "".join(
            f"{', '.join(f'{s:.1f}' for s in case['runs_seconds'].get(d, [])) or '-':>24s}" for d in designs))
    print(f"{large['rows']:,} rows over {small['rows']:,} rows (best runs): {ratios}; every incremental run's history "
          f"equal to its rebuild")
    print(f"machine: {figures['machine']}; JSON: {OUT / 'history_merge.json'}")
    spark.stop()


if __name__ == "__main__":
    main()
