"""How fresh each output and mirror is: from a change's source commit to the moment it is applied.

A change's source time is Debezium's `source.ts_ms` (the source database's
commit), or Kafka's record timestamp where the records carry no `source`
block. Neither is read by a query: ingest keeps Delta statistics (min and max
per file) on both (ingest/table.py STATS_COLUMNS), and `zync run` reads the
add actions of the commits its own ingest made from the Delta log, as it
already does to see what moved (service/versions.py). A file's changes are
taken as spread evenly between its oldest and newest source time.

"Applied" differs by kind:
- a mirror is merge-on-read: its view shows a change as soon as ingest
  committed it, so the moment is the raw commit's;
- an output has applied a change once a run that started after the change's
  raw commit succeeded and what it wrote is published (or it wrote nothing
  to publish): the moment is the end of that publish. A record a denorm holds
  back for its pair counts as applied (it is done or pending in the model's
  own terms; `zync etl status` shows it as pending).

Besides the freshness of applied changes, each model has a "behind" time:
how long its oldest input not yet applied has been waiting (from the moment
`zync run` first saw it in its topic), zero when everything is applied, so an
idle database reads as fresh, not stale.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from service.json_file import write_json
from service.project import TARGET_PATH
from zync.pools import file_topics

SOURCE_TS = ("value", "source", "ts_ms")  # Debezium's envelope: the source database's commit time (ms)
KAFKA_TS = ("kafka", "timestamp")  # the raw table's own column: Kafka's record timestamp
_COMMIT_TIME = re.compile(r'^\{"commitInfo":\{"timestamp":(\d+)')
_METRIC = re.compile(r'"(num\w+)":"(\d+)"')
# The operationMetrics that count a commit's rows written: an append (WRITE, CREATE TABLE AS SELECT)
# and a MERGE (a mirror's fold).
ROWS_WRITTEN = ("numOutputRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")


@dataclass(frozen=True)
class IngestedFile:
    """One data file an ingest commit added: its records and their source times (epoch ms)."""

    records: int
    oldest_ms: int
    newest_ms: int
    committed_ms: int  # the commit's time
    topic: str | None = None  # the one topic it holds, if its statistics say (a raw pool's files)


@dataclass(frozen=True)
class Commit:
    """What one Delta commit did, as its log says."""

    committed_ms: int | None
    files: tuple[IngestedFile, ...]  # the data files it added with a data change, and their source times
    rows_written: int  # from its operationMetrics (0 when it has none)


def _path(values: dict, path: tuple[str, ...]):
    for name in path:
        if not isinstance(values, dict):
            return None
        values = values.get(name)
    return values


def _epoch_ms(value) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value)
    try:  # a timestamp's statistic: ISO 8601 text, e.g. 2026-11-26T23:36:14.156Z
        return int(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def source_times(stats: dict) -> tuple[int, int] | None:
    """(oldest, newest) source time in a file's statistics: source.ts_ms if kept, else Kafka's timestamp."""
    for path in (SOURCE_TS, KAFKA_TS):
        low, high = _epoch_ms(_path(stats.get("minValues", {}), path)), _epoch_ms(_path(stats.get("maxValues", {}), path))
        if low is not None and high is not None:
            return low, high
    return None


def read_commit(actions: list[str]) -> Commit:
    """One commit's actions (their JSON text, as TableVersions.commits gives them) -> Commit."""
    committed_ms, rows, adds = None, 0, []
    for text in actions:
        if text.startswith('{"commitInfo":'):
            # Read with patterns: a commitInfo's text is not always valid JSON (service/versions.py).
            found = _COMMIT_TIME.match(text)
            committed_ms = int(found.group(1)) if found else None
            rows = sum(int(v) for k, v in _METRIC.findall(text) if k in ROWS_WRITTEN)
        elif text.startswith('{"add":'):
            adds.append(json.loads(text)["add"])
    files = []
    for add in adds:
        if not add.get("dataChange", True):
            continue  # a compaction's rewrite
        stats = json.loads(add.get("stats") or "{}")
        times = source_times(stats)
        records = stats.get("numRecords")
        if times is None or not records:
            continue
        committed = committed_ms if committed_ms is not None else int(add.get("modificationTime", 0))
        topics = file_topics(add, stats)
        if len(topics) > 1:  # a raw pool's file: its topics' rows, each with the file's times
            files.extend(IngestedFile(held["rows"], times[0], times[1], committed, topic)
                         for topic, held in topics.items() if held["rows"])
        else:
            files.append(IngestedFile(int(records), times[0], times[1], committed, next(iter(topics), None)))
    return Commit(committed_ms, tuple(files), rows)


@dataclass(frozen=True)
class Observed:
    """Freshness (seconds) of `count` changes spread evenly from `low` to `high`."""

    low: float
    high: float
    count: int


@dataclass
class _Waiting:
    file: IngestedFile
    arrived_s: float  # when zync run first saw it waiting in its topic (epoch seconds)
    taken: bool = False  # a run that started after its commit succeeded


class ModelFreshness:
    """One model's changes from ingest to applied, and what they measure. Pure bookkeeping: no I/O."""

    def __init__(self, kind: str):
        self.kind = kind  # "output", "mirror" or "history" (applied when its run commits, as an output's run)
        self.waiting: deque[_Waiting] = deque()
        self.newest_s: float | None = None  # freshness of the newest change applied last
        self.applied_at: float | None = None  # epoch seconds of the last apply

    def ingested(self, files: list[IngestedFile], arrived_s: float) -> list[Observed]:
        """Files ingest committed into one of the model's raw tables; a mirror shows them at once."""
        if self.kind == "mirror":
            return self._observe([(f, f.committed_ms / 1000) for f in files])
        self.waiting.extend(_Waiting(f, min(arrived_s, f.committed_ms / 1000)) for f in files)
        return []

    def run_succeeded(self, started_s: float) -> None:
        """A run of an output that started at `started_s` succeeded: it took every change committed before."""
        for item in self.waiting:
            if item.file.committed_ms / 1000 <= started_s:
                item.taken = True

    def published(self, at_s: float) -> list[Observed]:
        """Everything an output's runs took is published (or there was nothing to publish) at `at_s`."""
        taken = [w for w in self.waiting if w.taken]
        if not taken:
            return []
        self.waiting = deque(w for w in self.waiting if not w.taken)
        return self._observe([(w.file, at_s) for w in taken])

    def _observe(self, applied: list[tuple[IngestedFile, float]]) -> list[Observed]:
        observed = []
        for f, at_s in applied:
            observed.append(Observed(max(0.0, at_s - f.newest_ms / 1000), max(0.0, at_s - f.oldest_ms / 1000),
                                     f.records))
        newest = max(applied, key=lambda item: item[0].newest_ms, default=None)
        if newest is not None:
            self.newest_s = max(0.0, newest[1] - newest[0].newest_ms / 1000)
            self.applied_at = newest[1]
        return observed

    def behind(self, now_s: float, topic_waiting_since: float | None) -> float:
        """Seconds the oldest input not yet applied has waited; 0 when all is applied.

        topic_waiting_since: the earliest time a message not yet ingested was seen in one of its
        topics (None: none waits there).
        """
        starts = [w.arrived_s for w in self.waiting]
        if topic_waiting_since is not None:
            starts.append(topic_waiting_since)
        return max(0.0, now_s - min(starts)) if starts else 0.0


class TopicWaits:
    """Per input topic, since when its oldest message not yet ingested has waited (as far as counts tell).

    zync run sees only how many messages a topic holds past its raw table. A topic that has any is
    waiting from the first look that saw them; after an ingest committed what the topic held when it
    read its marks, what waits still came after those marks, so the wait starts again there. Without
    that, a steady stream, which always has a message waiting at every look, would read as waiting
    since the run started.
    """

    def __init__(self) -> None:
        self._since: dict[str, float] = {}

    def looked(self, topic: str, waiting: int, now_s: float) -> None:
        """A look at the topic found `waiting` messages past its raw table."""
        if waiting > 0:
            self._since.setdefault(topic, now_s)
        else:
            self._since.pop(topic, None)

    def ingested(self, topic: str, marks_read_s: float) -> None:
        """An ingest committed everything the topic held when it read its marks, at `marks_read_s` or later."""
        if topic in self._since:
            self._since[topic] = max(self._since[topic], marks_read_s)

    def since(self, topic: str) -> float | None:
        return self._since.get(topic)

    def earliest(self, topics) -> float | None:
        found = [self._since[t] for t in topics if t in self._since]
        return min(found) if found else None


def spread(observed: Observed, bounds: tuple[float, ...]) -> list[int]:
    """How many of `observed.count` values spread evenly from low to high fall at or under each bound."""
    n, low, high = observed.count, observed.low, observed.high
    counts = []
    for bound in bounds:
        if n <= 1 or high <= low:  # one value, or all alike
            counts.append(n if low <= bound else 0)
            continue
        step = (high - low) / (n - 1)
        # values low + i*step for i in 0..n-1; those <= bound: i <= (bound - low) / step
        counts.append(0 if bound < low else min(n, int((bound - low) / step + 1e-9) + 1))
    return counts


def freshness_file(root: Path, target_name: str) -> Path:
    """Where a running `zync run` keeps its models' freshness for `zync etl status` (written every few seconds)."""
    return root / TARGET_PATH / f"freshness-{target_name}.json"


def write_freshness(path: Path, models: dict[str, dict]) -> None:
    write_json(path, {"as_of": time.time(), "models": models}, indent=1)


def read_freshness(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
