"""Fault campaign: `zync run` under kill -9, SIGTERM, broker and registry restarts and a second run, checked record by record.

    .venv/bin/python bench/chaos.py [--seed 16] [--kills 20] [--sigterms 3] [--broker 2] [--registry 2] [--second-runs 2]

One command, alone on the machine (its own state folder and ports; it starts
and stops its own Kafka, registry and catalog). One `zync run` process follows
a project with the invoices transform (the demo's, under names of its own).
Each trial produces a round of Debezium events (new invoices with their
statuses, the previous round's invoices paid: denorm pairs and partial
updates) and, at a seeded random moment while the round flows, injects one
fault:

- kill9: kill -9 of `zync run`, then a restart;
- sigterm: SIGTERM (must exit 0), then a restart;
- broker / registry: the embedded Kafka broker (or schema registry) stopped
  for a few seconds and started again; `zync run` is left running (it must
  carry on by itself; if it exited, that is reported and it is restarted);
- second-run: a second `zync run` of the same project for a few seconds
  beside the first, then stopped.

The trial order is shuffled with the seed, so faults land in ingest, dbt and
egress alike. After each trial the pipeline drains, and a checker compares
the output topic with the output computed independently from the produced
events: records lost, duplicated, out of per-key order, and whether the
offsets are contiguous from 0. Prints a table per fault class and exits 1 on
any loss, duplicate or misorder. JSON in bench/out/chaos.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
STATE = ROOT / ".local" / "bench-chaos-state"
PORTS = {"ZYNC_KAFKA_PORT": "24392", "ZYNC_REGISTRY_PORT": "24381", "ZYNC_CATALOG_PORT": "24727"}
os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local", "ZYNC_PROJECT_DIR": str(ROOT)})

sys.path.insert(0, str(ROOT))
from tests.service.conftest import InvoicesProject, invoices_project  # noqa: E402
from tests.service.harness import RunProcess, invoice_round  # noqa: E402
from zync import services  # noqa: E402
from zync.config import load_target  # noqa: E402

DRAIN_S = 600.0
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


class Campaign:
    def __init__(self, target, project: InvoicesProject, seed: int):
        self.target, self.project = target, project
        self.chance = random.Random(seed)
        self.log = STATE / "logs" / "zync-run.log"
        self.run = RunProcess(project, self.log)
        self.expected: dict[int, list[dict]] = defaultdict(list)
        self.expected_count = 0
        self.rounds = 0

    def produce_round(self) -> None:
        events, outputs = invoice_round(self.rounds)
        self.rounds += 1
        for topic in ("Invoices", "InvoiceStatus"):
            self.project.produce(self.target, topic, events[topic])
        for key, values in outputs.items():
            self.expected[key] += values
            self.expected_count += len(values)

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

    def second_run(self) -> dict:
        second = RunProcess(self.project, STATE / "logs" / "second-run.log")
        time.sleep(self.chance.uniform(20.0, 40.0))
        code = second.terminate() if second.process.poll() is None else second.process.returncode
        return {"second_exit_code": code}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--kills", type=int, default=20, help="kill -9 trials (default 20)")
    parser.add_argument("--sigterms", type=int, default=3)
    parser.add_argument("--broker", type=int, default=2, help="broker stop/start trials")
    parser.add_argument("--registry", type=int, default=2, help="registry stop/start trials")
    parser.add_argument("--second-runs", type=int, default=2, help="trials with a second zync run beside the first")
    parser.add_argument("--keep", action="store_true", help="leave the campaign's services running")
    args = parser.parse_args()

    trials = (["kill9"] * args.kills + ["sigterm"] * args.sigterms + ["broker"] * args.broker
              + ["registry"] * args.registry + ["second_run"] * args.second_runs)
    random.Random(args.seed).shuffle(trials)
    shutil.rmtree(STATE, ignore_errors=True)
    (STATE / "logs").mkdir(parents=True)
    OUT.mkdir(parents=True, exist_ok=True)
    target = load_target(None)
    services.up(target)
    results: list[dict] = []
    campaign = None
    try:
        project = invoices_project(STATE / "projects", "Chaos")
        campaign = Campaign(target, project, args.seed)
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
            row = {"trial": n, "fault": fault, "at_s": round(moment, 1), **observed,
                   "exited_after_fault": restarted, "exits_while_draining": exits, "drain_s": round(drain_s, 1), **check}
            results.append(row)
            print(f"  {n:>3} {fault:<10} at {moment:4.1f}s  lost {check['lost']} dup {check['duplicated']} "
                  f"misordered {check['misordered_keys']} contiguous {check['contiguous']}  {observed}", flush=True)
            if "stuck" in observed:
                break
    finally:
        if campaign is not None and campaign.run.process.poll() is None:
            campaign.run.terminate()
        if not args.keep:
            services.down(target)

    print(f"\n{'fault':<11}| trials | survived | lost | duplicated | misordered")
    failed = False
    for fault in dict.fromkeys(trials):
        rows = [r for r in results if r["fault"] == fault]
        # Counts are cumulative over the stream: a trial survives when, after it, nothing is wrong.
        survived = sum(1 for r in rows if not (r["lost"] or r["duplicated"] or r["misordered_keys"])
                       and r["contiguous"] and r.get("clean_exit", True) and "stuck" not in r)
        worst = {k: max((r[k] for r in rows), default=0) for k in ("lost", "duplicated", "misordered_keys")}
        failed |= survived < len(rows)
        print(f"{fault:<11}| {len(rows):>6} | {survived:>8} | {worst['lost']:>4} | {worst['duplicated']:>10} "
              f"| {worst['misordered_keys']:>10}")
    (OUT / "chaos.json").write_text(json.dumps({"seed": args.seed, "trials": results}, indent=2))
    print(f"JSON: {OUT / 'chaos.json'}")
    sys.exit(1 if failed or len(results) < len(trials) else 0)


if __name__ == "__main__":
    main()
