"""Fault campaign: `zync run` under kill -9, SIGTERM, restarts, a second run and a dead Spark engine, checked.

    .venv/bin/python bench/chaos.py [--seed 16] [--kills 20] [--sigterms 3] [--broker 2] [--registry 2]
                                    [--second-runs 2] [--spark-failures 3] [--s3] [--lock-dirs-apart]

One command, alone on the machine (its own state folder and ports, 24392,
24381 and 24727, moved with ZYNC_CHAOS_KAFKA_PORT, ZYNC_CHAOS_REGISTRY_PORT
and ZYNC_CHAOS_CATALOG_PORT; it starts and stops its own Kafka, registry and
catalog). One `zync run` process follows a project with the invoices demo's
transform and mirror (under names of its own). Its input topics have 3
partitions, records keyed by primary key as Debezium keys them. Each trial
produces a round of Debezium events (testkit/harness.py ChangeStream):
new invoices with their status rows (inserts: denorm pairs), and of the
earlier invoices a few status changes and item changes (updates: partial
rows), deletes each followed by its tombstone (an invoice's delete gives a
tombstone on the output; its status row's delete and both tombstones are
skipped), and an item change followed by a delete. At a seeded random moment
while the round flows it injects one fault:

- kill9: kill -9 of `zync run`, then a restart;
- sigterm: SIGTERM (must exit 0), then a restart;
- broker / registry: the embedded Kafka broker (or schema registry) stopped
  for a few seconds and started again; `zync run` is left running (it must
  carry on by itself; if it exited, that is reported and it is restarted);
- second_run: a second `zync run` of the same project beside the first: once
  it is ready (its first cycle over, 30-40 s after its start) a second round
  is produced for both to race on (ingest, the mirror's fold, the output
  model, egress), and 20-40 s later it is stopped; what it did (its cycles
  with work, records ingested, model runs, records published: its closing
  line) is reported; with --lock-dirs-apart the second run takes turns by
  file locks of a folder of its own ($ZYNC_EGRESS_LOCK_DIR), as on another
  machine, so only the topic's lease in the catalog's database makes the two
  runs' egresses take turns;
- spark_failure: a Spark job failure, for real and with no hook in zync: kill
  -9 of the Spark driver JVM `zync run` drives (its `java` child process,
  found with `pgrep -P`), so whatever Spark work is under way (a read of a
  topic batch, a MERGE of dbt's, an egress read) fails. `zync run` must end
  within two minutes with exit 1 and an error naming the dead engine (it
  checks its JVM when a stage fails, each cycle and while idle: a dead
  engine is not retried forever); a hang or another exit fails the trial. It
  is then restarted like after kill -9. (A failing Spark task inside a live
  JVM is retried by Spark itself or fails its stage, which `zync run` logs
  and retries after a back-off like any stage failure; the JVM's death is
  the failure a supervisor has to see.)

The trial order is shuffled with the seed, so faults land in ingest, dbt and
egress alike. After each trial the pipeline drains, and a checker compares
the output topic with the output computed independently from the produced
events (harness.expected_output applies the transform's rules to them):
records lost, duplicated, out of per-key order, and whether the offsets are
contiguous from 0. It then reads the invoices mirror (a SparkSession in this
process, through the shared catalog) and compares it with the current state
computed from the produced events (harness.expected_mirror): keys missing,
extra, or with other values (customer, upper(item), the soft-delete flag) are
its mirror mismatches. Prints a table per fault class and exits 1 on any
loss, duplicate, misorder, mirror mismatch or unclear failure. JSON in
bench/out/chaos.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
STATE = ROOT / ".local" / "bench-chaos-state"
# Ports of its own, whatever ZYNC_*_PORT says (the campaign stops its services at the end: never a user's);
# ZYNC_CHAOS_KAFKA_PORT etc. move them (another campaign on the machine).
PORTS = {name: os.environ.get(name.replace("ZYNC_", "ZYNC_CHAOS_"), default) for name, default in
         {"ZYNC_KAFKA_PORT": "24392", "ZYNC_REGISTRY_PORT": "24381", "ZYNC_CATALOG_PORT": "24727",
          "ZYNC_S3_PORT": "24390"}.items()}
os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local", "ZYNC_PROJECT_DIR": str(ROOT)})

sys.path.insert(0, str(ROOT))
from testkit.harness import (ChangeStream, RunProcess, engine_pid, expected_mirror,  # noqa: E402
                             expected_output, mirror_check)
from testkit.invoices import InvoicesProject, invoices_project  # noqa: E402
from stack import s3, services  # noqa: E402
from zync.config import load_target  # noqa: E402

DRAIN_S = 600.0
PARTITIONS = 3  # of each input topic: records go to one by their key (the primary key), as Debezium's do
ENGINE_EXIT_S = 120.0  # how long `zync run` may take to end after its Spark JVM died before it counts as hung
MIRROR_WAIT_S = 60.0  # the mirror runs in the outputs' `dbt run`; a failed run of it is retried after a back-off
FAULT_WINDOW_S = 12.0  # a busy cycle takes 10-30 s here: a moment in this window lands in any of its stages


def stream_check(published: list[dict], expected: dict[int, list[dict]]) -> dict:
    """Lost, duplicated and misordered output records, and whether offsets run 0..n-1 without a gap."""
    found: dict[int, list[dict]] = defaultdict(list)
    for r in published:
        found[r["key"]["ID"]].append(r["value"])
    lost = duplicated = misordered = 0
    for key in set(found) | set(expected):
        want, got = expected.get(key, []), found.get(key, [])
        as_text = lambda values: Counter(json.dumps(v, sort_keys=True) for v in values)  # noqa: E731
        missing, extra = as_text(want) - as_text(got), as_text(got) - as_text(want)
        lost += sum(missing.values())
        duplicated += sum(extra.values())
        if not missing and not extra and got != want:
            misordered += 1
    offsets = [r["kafka"]["offset"] for r in published]
    return {"lost": lost, "duplicated": duplicated, "misordered_keys": misordered,
            "contiguous": offsets == list(range(len(offsets)))}


SECOND_READY_S = 120.0  # how long a second `zync run` may take to be ready before its trial goes on without a race


def wait_ready(run: RunProcess, start: int) -> bool:
    """Whether the run said it is ready (its first cycle over) within SECOND_READY_S, reading its log
    from byte `start`."""
    deadline = time.monotonic() + SECOND_READY_S
    while time.monotonic() < deadline and run.process.poll() is None:
        with run.log.open(errors="replace") as log:
            log.seek(start)
            if any(line.startswith("{") and '"ready": true' in line for line in log):
                return True
        time.sleep(0.5)
    return False


def second_run_summary(log: Path, start: int) -> dict:
    """What a stopped run did, from its closing line (`zync run: stopped: N cycles (M with work) ...;
    R records ingested, K model runs, P records published, ...`), reading its log from byte `start`."""
    import re

    with log.open(errors="replace") as text:
        text.seek(start)
        closing = [line for line in text if line.startswith("zync run: stopped:")]
    if not closing:
        return {}
    found = {}
    for key, pattern in (("second_cycles_with_work", r"\((\d+) with work\)"),
                         ("second_records_ingested", r"(\d+) records ingested"),
                         ("second_model_runs", r"(\d+) model runs"),
                         ("second_records_published", r"(\d+) records published")):
        match = re.search(pattern, closing[-1])
        if match:
            found[key] = int(match.group(1))
    return found


class Campaign:
    def __init__(self, target, project: InvoicesProject, seed: int, spark, second_env: dict[str, str] | None = None):
        self.target, self.project, self.spark = target, project, spark
        self.second_env = second_env
        self.chance = random.Random(seed)
        self.stream = ChangeStream(seed)
        self.log = STATE / "logs" / "zync-run.log"
        self.run = RunProcess(project, self.log)
        self.produced: dict[str, list[dict]] = defaultdict(list)  # topic -> {"round", "event"}, in order
        self.expected: dict[int, list[dict]] = {}
        self.expected_count = 0
        self.rounds = 0

    def produce_round(self) -> None:
        events = self.stream.round()
        for topic in ("Invoices", "InvoiceStatus"):
            self.project.produce(self.target, topic, events[topic], partitions=PARTITIONS)
            self.produced[topic] += [{"round": self.rounds, "event": e} for e in events[topic]]
        self.rounds += 1
        # Recomputed from every produced event, not from what the generator meant.
        self.expected = expected_output(self.produced)
        self.expected_count = sum(len(v) for v in self.expected.values())

    def mirror_rows(self) -> dict[int, dict]:
        """invoices_mirror as it stands, read by this process's SparkSession through the shared catalog."""
        table = f"{self.target.schema}.{self.project.name('invoices_mirror')}"
        if not self.spark.catalog.tableExists(table):
            return {}
        return {r.invoice_id: {"customer": r.customer, "item": r.item, "deleted": r._zync_deleted}
                for r in self.spark.table(table).select("invoice_id", "customer", "item", "_zync_deleted").collect()}

    def check_mirror(self) -> dict:
        """The mirror against the current state computed from the produced events, once it has caught up."""
        expected = expected_mirror(self.produced)
        deadline = time.monotonic() + MIRROR_WAIT_S
        while True:
            check = mirror_check(self.mirror_rows(), expected)
            if not any(check.values()) or time.monotonic() > deadline:
                return check
            self.ensure_running()
            time.sleep(2)

    def ensure_running(self) -> bool:
        """Restarts `zync run` if it is not running; whether it had exited."""
        if self.run.process.poll() is None:
            return False
        self.run = RunProcess(self.project, self.log)
        return True

    def drain(self) -> tuple[float, int]:
        """Waits until every expected record is out (restarting `zync run` if it exits); seconds, and exits seen."""
        started, exits = time.monotonic(), 0
        while self.project.published_count(self.target) < self.expected_count:
            if self.ensure_running():
                exits += 1
            if time.monotonic() - started > DRAIN_S:
                raise TimeoutError(f"{self.expected_count} output records expected, "
                                   f"{self.project.published_count(self.target)} after {DRAIN_S:.0f} s; see {self.log}")
            time.sleep(0.5)
        time.sleep(3)  # a duplicate would land now
        return time.monotonic() - started, exits

    # -- faults: each returns what it observed

    def kill9(self) -> dict:
        self.run.kill()
        self.run = RunProcess(self.project, self.log)
        return {}

    def sigterm(self) -> dict:
        code = self.run.terminate()
        self.run = RunProcess(self.project, self.log)
        return {"exit_code": code, "clean_exit": code == 0}

    def _restart_service(self, name: str) -> dict:
        services.down(self.target, only={name})
        down_s = self.chance.uniform(2.0, 8.0)
        time.sleep(down_s)
        services.up(self.target, only={name})
        exited = self.run.process.poll() is not None
        return {"down_s": round(down_s, 1), "zync_run_exited": exited}

    def broker(self) -> dict:
        return self._restart_service("kafka")

    def registry(self) -> dict:
        return self._restart_service("registry")

    def spark_failure(self) -> dict:
        """kill -9 of the Spark driver JVM `zync run` drives: the run must end, exit 1, and say why."""
        jvm = engine_pid(self.run.process.pid)
        if jvm is None:
            return {"no_jvm": True, "failed_clearly": False}
        log_before = self.log.stat().st_size
        os.kill(jvm, signal.SIGKILL)
        started = time.monotonic()
        try:
            code = self.run.process.wait(ENGINE_EXIT_S)
        except subprocess.TimeoutExpired:
            self.run.kill()
            return {"hung": True, "failed_clearly": False}
        with self.log.open() as log:
            log.seek(log_before)
            said = "the Spark engine (JVM pid" in log.read()
        self.run = RunProcess(self.project, self.log)
        return {"exit_code": code, "exit_s": round(time.monotonic() - started, 1),
                "failed_clearly": code == 1 and said}

    def second_run(self) -> dict:
        log = STATE / "logs" / "second-run.log"
        start = log.stat().st_size if log.exists() else 0
        second = RunProcess(self.project, log, env=self.second_env)
        ready = wait_ready(second, start)
        if ready:  # both running: a round for both to race on
            self.produce_round()
        time.sleep(self.chance.uniform(20.0, 40.0))
        code = second.terminate() if second.process.poll() is None else second.process.returncode
        return {"second_exit_code": code, "second_raced_a_round": ready, **second_run_summary(log, start)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--kills", type=int, default=20, help="kill -9 trials (default 20)")
    parser.add_argument("--sigterms", type=int, default=3)
    parser.add_argument("--broker", type=int, default=2, help="broker stop/start trials")
    parser.add_argument("--registry", type=int, default=2, help="registry stop/start trials")
    parser.add_argument("--second-runs", type=int, default=2, help="trials with a second zync run beside the first")
    parser.add_argument("--spark-failures", type=int, default=3,
                        help="trials killing (-9) the Spark JVM of zync run (default 3)")
    parser.add_argument("--s3", action="store_true",
                        help="keep the project's tables on an S3 server the campaign starts (S3Proxy, `zync up "
                             "--s3`; docs/object-storage.md), every zync run and this checker reaching them there")
    parser.add_argument("--lock-dirs-apart", action="store_true",
                        help="the second zync run takes turns by file locks of a folder of its own, as on another "
                             "machine: only the catalog's egress lease makes the two egresses take turns")
    parser.add_argument("--keep", action="store_true", help="leave the campaign's services running")
    args = parser.parse_args()
    if args.s3:  # before the target is read: its warehouse and schema come from these
        os.environ.update({**s3.environment(), "ZYNC_SCHEMA": "zync_s3"})

    trials = (["kill9"] * args.kills + ["sigterm"] * args.sigterms + ["broker"] * args.broker
              + ["registry"] * args.registry + ["second_run"] * args.second_runs
              + ["spark_failure"] * args.spark_failures)
    random.Random(args.seed).shuffle(trials)
    shutil.rmtree(STATE, ignore_errors=True)
    (STATE / "logs").mkdir(parents=True)
    OUT.mkdir(parents=True, exist_ok=True)
    target = load_target(None)
    services.up(target, object_store=args.s3)
    results: list[dict] = []
    campaign = None
    try:
        from zync.spark import spark_session

        spark = spark_session(target)  # reads the mirror; the catalog is shared with `zync run`'s
        project = invoices_project(STATE / "projects", "Chaos")
        second_env = {"ZYNC_EGRESS_LOCK_DIR": str(STATE / "second-run-locks")} if args.lock_dirs_apart else None
        campaign = Campaign(target, project, args.seed, spark, second_env)
        campaign.produce_round()
        campaign.drain()  # the first cycle of a cold engine: not a trial
        print(f"{len(trials)} trials, seed {args.seed}", flush=True)
        for n, fault in enumerate(trials, start=1):
            campaign.produce_round()
            moment = campaign.chance.uniform(0.0, FAULT_WINDOW_S)
            time.sleep(moment)
            observed = getattr(campaign, fault)()
            restarted = campaign.ensure_running()
            try:
                drain_s, exits = campaign.drain()
            except TimeoutError as e:
                drain_s, exits, observed["stuck"] = float("nan"), 0, str(e)
            check = stream_check(project.published(target), campaign.expected)
            mirror = campaign.check_mirror() if "stuck" not in observed else {}
            row = {"trial": n, "fault": fault, "at_s": round(moment, 1), **observed,
                   "exited_after_fault": restarted, "exits_while_draining": exits, "drain_s": round(drain_s, 1),
                   **check, **mirror, "mirror_mismatches": sum(mirror.values())}
            results.append(row)
            print(f"  {n:>3} {fault:<13} at {moment:4.1f}s  lost {check['lost']} dup {check['duplicated']} "
                  f"misordered {check['misordered_keys']} contiguous {check['contiguous']} "
                  f"mirror {row['mirror_mismatches']}  {observed}", flush=True)
            if "stuck" in observed:
                break
    finally:
        if campaign is not None and campaign.run.process.poll() is None:
            campaign.run.terminate()
        if not args.keep:
            services.down(target)

    print(f"\n{'fault':<14}| trials | survived | lost | duplicated | misordered | mirror mismatches")
    failed = False
    for fault in dict.fromkeys(trials):
        rows = [r for r in results if r["fault"] == fault]
        # Counts are cumulative over the stream: a trial survives when, after it, nothing is wrong.
        survived = sum(1 for r in rows if not (r["lost"] or r["duplicated"] or r["misordered_keys"]
                                               or r["mirror_mismatches"])
                       and r["contiguous"] and r.get("clean_exit", True) and r.get("failed_clearly", True)
                       and "stuck" not in r)
        worst = {k: max((r[k] for r in rows), default=0)
                 for k in ("lost", "duplicated", "misordered_keys", "mirror_mismatches")}
        failed |= survived < len(rows)
        print(f"{fault:<14}| {len(rows):>6} | {survived:>8} | {worst['lost']:>4} | {worst['duplicated']:>10} "
              f"| {worst['misordered_keys']:>10} | {worst['mirror_mismatches']:>17}")
    (OUT / "chaos.json").write_text(json.dumps({"seed": args.seed, "warehouse": "s3" if args.s3 else "local",
                                                "lock_dirs_apart": args.lock_dirs_apart,
                                                "trials": results}, indent=2))
    print(f"JSON: {OUT / 'chaos.json'}")
    sys.exit(1 if failed or len(results) < len(trials) else 0)


if __name__ == "__main__":
    main()
