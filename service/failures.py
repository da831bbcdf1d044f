"""What `zync run` is failing at now, per topic or model, kept in a file that `zync etl status` shows.

One failing table never stops the others: the run backs off from it
(1 s, 2 s ... up to a minute) and goes on with the rest. So that an operator
sees which table is stuck and why without reading the log, the run keeps
the current failures here (written when they change, removed when the
table recovers); `zync etl status` prints them.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from service.json_file import write_json
from service.project import TARGET_PATH


@dataclass
class Failure:
    stage: str  # ingest, dbt, egress, compact, discover
    of: str  # the topic, model or table
    error: str  # the last error's message
    since: float  # epoch seconds of the first failure in a row
    failures: int  # failures in a row


def failures_file(root: Path, target_name: str) -> Path:
    return root / TARGET_PATH / f"failing-{target_name}.json"


class Failures(dict[str, Failure]):
    """'<stage>:<what>' -> Failure, saved to its file after each change."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path

    @classmethod
    def read(cls, path: Path) -> Failures:
        """What the run writing `path` is failing at now (none if it never wrote it)."""
        failures = cls(path)
        try:
            stored = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            stored = {}
        for key, fields in stored.items():
            failures[key] = Failure(**fields)
        return failures

    @classmethod
    def start(cls, path: Path) -> Failures:
        """A run's record, empty: a restart tries every table again, so what an earlier run failed at goes."""
        failures = cls(path)
        failures.save()
        return failures

    def failed(self, stage: str, what: str, error: str) -> None:
        key = f"{stage}:{what}"
        before = self.get(key)
        self[key] = Failure(stage, what, error, before.since if before else time.time(),
                            before.failures + 1 if before else 1)
        self.save()

    def recovered(self, stage: str, what: str) -> None:
        if self.pop(f"{stage}:{what}", None) is not None:
            self.save()

    def save(self) -> None:
        write_json(self.path, {k: asdict(v) for k, v in sorted(self.items())}, indent=1)
