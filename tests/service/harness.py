"""A `zync run` process and a checked stream of invoice events: shared by the service tests and bench/chaos.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path

from tests.service.conftest import ROOT, InvoicesProject

BIN = ROOT / ".venv" / "bin"
WAIT_S = 300.0  # a cold JVM on a loaded 2-core machine takes most of a minute before its first cycle


class RunProcess:
    """One `zync run` process of a project, its log in a file."""

    def __init__(self, project: InvoicesProject, log: Path, target: str = "local"):
        self.log = log
        with log.open("a") as out:
            self.process = subprocess.Popen(
                [str(BIN / "zync"), "run", "--interval", "1s", "--target", target], cwd=project.path,
                stdout=out, stderr=out,
                env={**os.environ, "ZYNC_PROJECT_DIR": str(project.path)})

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
