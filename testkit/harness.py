"""A `zync run` process and a checked stream of invoice events: shared by the service tests and bench/chaos.py."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path

from testkit.invoices import ROOT, InvoicesProject

BIN = ROOT / ".venv" / "bin"
WAIT_S = 300.0  # a cold JVM on a loaded 2-core machine takes most of a minute before its first cycle


class RunProcess:
    """One `zync run` process of a project, its log in a file."""

    def __init__(self, project: InvoicesProject, log: Path, target: str = "local", options: tuple[str, ...] = (),
                 own_group: bool = False, env: dict[str, str] | None = None):
        """own_group: in a process group of its own, as a supervisor starts it (signal_group reaches it alone);
        env: added to this process's environment."""
        self.log = log
        with log.open("a") as out:
            self.process = subprocess.Popen(
                [str(BIN / "zync"), "run", "--interval", "1s", "--target", target, *options], cwd=project.path,
                stdout=out, stderr=out, start_new_session=own_group,
                env={**os.environ, "ZYNC_PROJECT_DIR": str(project.path), **(env or {})})

    def cycles(self) -> int:
        """Cycles with work this process (and those before it in the log) reported."""
        return sum(1 for line in self.log.read_text().splitlines() if line.startswith("{")
                   and json.loads(line).get("stage") == "cycle")

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(30)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(WAIT_S)

    def signal_group(self, sig: int = signal.SIGTERM) -> None:
        """Signal the run's whole process group, its Spark JVM with it (systemd's KillMode=control-group)."""
        os.killpg(self.process.pid, sig)


def engine_pid(pid: int) -> int | None:
    """The pid of the Spark driver JVM a `zync run` process launched (its `java` child), if it has one."""
    found = subprocess.run(["pgrep", "-P", str(pid), "-x", "java"], capture_output=True, text=True)
    pids = found.stdout.split()
    return int(pids[0]) if pids else None


def wait_until(check, what: str, process: RunProcess, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if process.process.poll() is not None:
            raise AssertionError(f"zync run exited ({process.process.returncode}) while waiting for {what}:\n"
                                 + process.log.read_text()[-3000:])
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout:.0f}s:\n" + process.log.read_text()[-3000:])
        time.sleep(0.5)


def invoice_round(round_no: int, size: int = 4) -> tuple[dict[str, list[dict]], dict[int, list[dict]]]:
    """One round of events (new invoices with their statuses; the previous round's paid) and the
    output each new invoice must get, in order: its denormalised row, then its paid status."""
    ids = [1000 + round_no * 10 + j for j in range(size)]
    previous = [1000 + (round_no - 1) * 10 + j for j in range(size)] if round_no > 0 else []
    invoices = [{"key": {"ID": i}, "value": {"before": None, "op": "c",
                                             "after": {"ID": i, "customer": f"c{i}", "item": f"item{i}"}}}
                for i in ids]
    statuses = [{"key": {"ID": 5000 + i}, "value": {"before": None, "op": "c",
                                                    "after": {"ID": 5000 + i, "InvoiceID": i, "status": "new"}}}
                for i in ids]
    statuses += [{"key": {"ID": 5000 + i}, "value": {"before": None, "op": "u",
                                                     "after": {"ID": 5000 + i, "InvoiceID": i, "status": "paid"}}}
                 for i in previous]
    expected = {i: [{"ID": i, "customer": f"c{i}", "item": f"item{i}", "invoice_status": "new"}] for i in ids}
    paid = {i: [{"ID": i, "invoice_status": "paid"}] for i in previous}
    return {"Invoices": invoices, "InvoiceStatus": statuses}, {**expected, **{i: v for i, v in paid.items()}}


def by_key(records: list[dict]) -> dict[int, list[dict]]:
    found: dict[int, list[dict]] = defaultdict(list)
    for r in records:
        found[r["key"]["ID"]].append(r["value"])
    return dict(found)


# --- A seeded Debezium change stream of the invoices demo, and what it must give ------------------------------
#
# The generator (ChangeStream) and the reference (expected_output, expected_mirror) are apart on purpose: the
# reference reads only the produced events and applies the demo's transform and mirror files' rules to them
# (demo/invoices/transforms/), so a generator bug cannot hide a pipeline bug.

STATUSES = ("paid", "late", "collections", "disputed")


class ChangeStream:
    """Rounds of Debezium events for Invoices and InvoiceStatus, as the connector writes them.

    Each round: `size` new invoices (op c) with their status rows (op c,
    status "new"); and, of the invoices created in earlier rounds and still
    there, a few each: a status change (InvoiceStatus u), an item change
    (Invoices u), a delete (Invoices d, then its tombstone; its status row
    deleted too, d and tombstone), and an item change followed by a delete.
    An invoice gets at most one of these per round, so one output key's
    records in a round come from one input topic (their order is then
    defined: per-key order is per input record key). Keys are primary keys,
    so with several partitions each key's events stay in one.
    """

    def __init__(self, seed: int, size: int = 4):
        self.chance = random.Random(seed)
        self.size = size
        self.next_id = 1000
        self.live: dict[int, dict] = {}  # invoice ID -> its row (from earlier rounds)

    def round(self) -> dict[str, list[dict]]:
        invoices: list[dict] = []
        statuses: list[dict] = []
        earlier = sorted(self.live)
        self.chance.shuffle(earlier)
        paid, updated, deleted, updated_deleted = (earlier[0:2], earlier[2:3], earlier[3:4], earlier[4:5])
        for i in paid:
            status = self.chance.choice(STATUSES)
            statuses.append(_change("u", {"ID": 5000 + i}, {"ID": 5000 + i, "InvoiceID": i, "status": status}))
        for i in updated + updated_deleted:
            self.live[i] = {**self.live[i], "item": f"item{i}-{self.chance.randrange(1000)}"}
            invoices.append(_change("u", {"ID": i}, self.live[i]))
        for i in deleted + updated_deleted:
            row = self.live.pop(i)
            invoices += [_change("d", {"ID": i}, None, before=row), {"key": {"ID": i}, "value": None}]
            status_row = {"ID": 5000 + i, "InvoiceID": i, "status": None}
            statuses += [_change("d", {"ID": 5000 + i}, None, before=status_row),
                         {"key": {"ID": 5000 + i}, "value": None}]
        for _ in range(self.size):
            i, self.next_id = self.next_id, self.next_id + 1
            row = {"ID": i, "customer": f"c{i}", "item": f"item{i}"}
            invoices.append(_change("c", {"ID": i}, row))
            statuses.append(_change("c", {"ID": 5000 + i}, {"ID": 5000 + i, "InvoiceID": i, "status": "new"}))
            self.live[i] = row
        return {"Invoices": invoices, "InvoiceStatus": statuses}


def _change(op: str, key: dict, after: dict | None, before: dict | None = None) -> dict:
    return {"key": key, "value": {"before": before, "after": after, "op": op}}


def expected_output(events: dict[str, list[dict]]) -> dict[int, list[dict]]:
    """NewInvoices per key, in order, from every produced event (each topic's list in production order).

    The rules of demo/invoices/transforms/invoices.yml: a c/r invoice and a
    c/r status row of it (by InvoiceID) make one denormalised row (the n-th
    of each side pair up); a status u is a partial row {ID, invoice_status};
    an invoice u a partial row {ID, customer, item}; an invoice d a
    tombstone; a tombstone, and a status d (no rule takes it), give nothing.
    Events are taken round by round in the order the lists hold them, the
    Invoices list of a round first: with at most one input topic per output
    key in a round (ChangeStream), that is the order the ETL keeps.
    """
    out: dict[int, list[dict]] = defaultdict(list)
    left: dict[int, list[dict]] = defaultdict(list)   # pending c/r invoices per join key
    right: dict[int, list[dict]] = defaultdict(list)  # pending c/r status rows per join key

    def pair(join_key: int) -> None:
        while left[join_key] and right[join_key]:
            invoice, status = left[join_key].pop(0), right[join_key].pop(0)
            out[invoice["ID"]].append({**invoice, "invoice_status": status["status"]})

    for topic, event in _in_rounds(events):
        value = event["value"]
        if value is None:
            continue  # a tombstone: skipped
        op, after = value["op"], value["after"]
        if topic == "Invoices":
            if op in ("c", "r"):
                left[after["ID"]].append({k: after[k] for k in ("ID", "customer", "item")})
                pair(after["ID"])
            elif op == "u":
                out[event["key"]["ID"]].append({k: after[k] for k in ("ID", "customer", "item")})
            elif op == "d":
                out[event["key"]["ID"]].append(None)
        elif op in ("c", "r"):
            right[after["InvoiceID"]].append(after)
            pair(after["InvoiceID"])
        elif op == "u":
            out[after["InvoiceID"]].append({"ID": after["InvoiceID"], "invoice_status": after["status"]})
    return dict(out)


def _in_rounds(events: dict[str, list[dict]]):
    """(topic, event) round by round: each topic's events carry the round they were produced in."""
    rounds = max((e["round"] for topic in events.values() for e in topic), default=-1) + 1
    for n in range(rounds):
        for topic in ("Invoices", "InvoiceStatus"):
            for event in events.get(topic, []):
                if event["round"] == n:
                    yield topic, event["event"]


def expected_mirror(events: dict[str, list[dict]]) -> dict[int, dict]:
    """invoices_mirror's rows by invoice_id, from every produced Invoices event (invoices_mirror.yml's rules).

    c, r and u set customer and upper(item); d flags the row deleted (soft
    delete) and keeps its last values; tombstones are skipped.
    """
    rows: dict[int, dict] = {}
    for topic, event in _in_rounds(events):
        value = event["value"]
        if topic != "Invoices" or value is None:
            continue
        key = event["key"]["ID"]
        if value["op"] in ("c", "r", "u"):
            after = value["after"]
            rows[key] = {"customer": after["customer"], "item": after["item"].upper(), "deleted": False}
        elif value["op"] == "d":
            rows[key] = {**rows.get(key, {"customer": None, "item": None}), "deleted": True}
    return rows


def mirror_check(found: dict[int, dict], expected: dict[int, dict]) -> dict:
    """Mirror rows missing, extra, and with other values than the expected current state.

    A soft-deleted row must be flagged and keep its key's last values, however
    the key's changes fell into runs.
    """
    missing = sum(1 for k in expected if k not in found)
    extra = sum(1 for k in found if k not in expected)
    wrong = sum(1 for key in expected.keys() & found.keys() if found[key] != expected[key])
    return {"mirror_missing": missing, "mirror_extra": extra, "mirror_wrong": wrong}
