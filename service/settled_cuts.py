"""Settled cuts: a connector's transaction cut that every base of its mirrors holds exactly, recorded with
the bases' Delta versions, so that a reader takes all of them at one whole transaction from the bases alone.

A mirror at its connector's cut (`consistency: transaction`) is a view: its base plus the raw pool's
changes past the base's cursor, up to the cut. Always fresh, but a query over a few of them plans and
runs that merge for each, seconds a query (docs/benchmarks.md, "Reading the mirrors at the cut"). Its
folds take the changes up to the cut as it stands and move the base's cursor exactly there
(macros/mirror/cursor/zync_mirror_cut_cursor.sql), and a connector's mirrors fold together
(service/folds.py). After such a cycle every base holds the same cut: each base's cursor equals the
cut's offsets of its topic (a base whose topic gained nothing since its last fold holds it already).
`zync run` then appends the cut and every base's version to `<pool>__settled` (zync/transactions.py:
SETTLED_COLUMNS). Reading each base `VERSION AS OF` its version (macro zync_settled_cut) gives every
mirror of the connector at that one whole transaction: plain Delta reads, no pool scan, no merge, as
fresh as the last cycle that folded.

What a base holds is read from its own log, not from what this process ran: the cursor its newest commit
that may have changed rows carries (macros/mirror/cursor/zync_mirror_cursor_metadata.sql), by the rule a
mirror's dbt run reads it with (macros/mirror/cursor/zync_mirror_committed_cursor.sql), so a hand-run
dbt or another writer in between makes the check fail, never pass wrongly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from zync.config import project_var
from zync.delta_metadata import commit_texts
from zync.transactions import SETTLED_COLUMNS, Cut, settled_table_name

if TYPE_CHECKING:
    from service.project import ZyncModel
    from service.versions import TableVersion, TableVersions

# How far back a base's log is walked for the commit carrying its cursor, past commits that change no
# row (a compaction, a property set): the mirror's own fold commits every time it moves.
CURSOR_LOOK_BACK = 20
# The dbt var naming the operations that change no row (dbt_project.yml).
KEEPING_ROWS_VAR = "zync_operations_keeping_rows"


@dataclass(frozen=True)
class Settled:
    """A settled cut: the connector's cut, and each mirror's (database.name) base version holding it."""

    connector: str
    cut: Cut
    versions: dict[str, int]


def topic_cursor(cut: Cut, topic: str) -> dict[str, int]:
    """The cut's offsets of one topic as a mirror's cursor is written: {partition (text): offset}."""
    return {str(partition): offset for (t, partition), offset in cut.offsets.items() if t == topic}


def carried_cursor(mirror: str, commits: Iterable[tuple[int, list[str]]],
                   keeping_rows: Collection[str]) -> tuple[int, dict[str, int]] | None:
    """(version, cursor): the cursor the newest of `commits` (newest first) carrying `mirror`'s carries, and
    the newest version, which holds the same rows: the one a reader is pointed at, whose files a VACUUM
    keeps. The rule of the macro zync_mirror_committed_cursor, which a mirror's dbt runs follow: commits of
    an operation in `keeping_rows` (a compaction, a property set) are passed over, a RESTORE to a version is
    followed there; any other commit first (a hand-run DELETE, a restore by timestamp), or none carrying
    the cursor, and the cursor is not known: None."""
    newest, restored_to = None, None
    for version, texts in commits:
        newest = version if newest is None else newest
        info = _commit_info(texts)
        stored = _json(info.get("userMetadata"))
        if restored_to is not None and version > restored_to:
            continue  # undone by the RESTORE
        if isinstance(stored, dict) and stored.get("zync_mirror") == mirror:
            return newest, {str(p): int(o) for p, o in (stored.get("cursor") or {}).items()}
        if info.get("operation") == "RESTORE" and _restored_version(info) is not None:
            restored_to = _restored_version(info)
        elif info.get("operation") not in keeping_rows:
            return None
    return None


def _commit_info(texts: list[str]) -> dict:
    for text in texts:
        action = json.loads(text)
        if "commitInfo" in action:
            return action["commitInfo"]
    return {}


def _restored_version(info: dict) -> int | None:
    """The version a RESTORE went back to; None if restored by timestamp."""
    version = (info.get("operationParameters") or {}).get("version")
    return int(version) if version is not None and str(version).strip() else None


def _json(text: str | None) -> object:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


class SettledCuts:
    """Checks, after a cycle's folds, whether each connector's mirrors hold its cut, and records it."""

    def __init__(self, spark, versions: "TableVersions"):
        self.spark = spark
        self.versions = versions
        self.recorded: dict[str, Settled] = {}  # connector -> the settled cut last recorded here
        self.settled_at: dict[str, float] = {}  # connector -> when (monotonic) its bases last held its cut
        self.lagging: set[str] = set()  # mirrors whose bases did not hold their connector's cut at the last check
        self._checked: dict[str, tuple] = {}  # connector -> (cut, base versions) of its last check
        self.tables: set[str] = set()  # the settled tables written here (database.table)
        # as the macro reads it: a project made before the var names none, and only a base's own newest
        # commit then vouches for its cursor
        self.keeping_rows = frozenset(project_var(KEEPING_ROWS_VAR, ()))

    def due(self, connectors: set[str], every_s: float) -> set[str]:
        """The connectors whose mirrors should all fold now: none settled here for `every_s`."""
        now = time.monotonic()
        return {c for c in connectors if now - self.settled_at.get(c, float("-inf")) >= every_s}

    def after_folds(self, pool: str, connector: str, cut: Cut, mirrors: list["ZyncModel"]) -> Settled | None:
        """Record the connector's cut in `<pool>__settled` if every mirror's base holds it exactly, unless the
        same cut at the same versions was the last recorded; the settled cut recorded, or None. The initial
        snapshot, whole, is a cut too (END offset -1, before every transaction)."""
        if not mirrors or (cut.end_offset < 0 and not cut.offsets):
            return None  # no cut yet: the initial snapshot is not whole
        bases = {m.name: self.versions.version(m.table) for m in mirrors}
        state = (cut, tuple(sorted(bases.items())))
        if self._checked.get(connector) == state:
            return None  # nothing moved since it was found not to hold
        self._checked[connector] = state
        versions, lagging = {}, set()
        for mirror in mirrors:
            held = self._held(mirror, bases[mirror.name])
            if held is None or held[1] != topic_cursor(cut, mirror.inputs[0].topic):
                lagging.add(mirror.name)
            else:
                versions[mirror.relation] = held[0]
        self.lagging = (self.lagging - {m.name for m in mirrors}) | lagging
        if lagging:
            return None
        settled = Settled(connector, cut, versions)
        self.settled_at[connector] = time.monotonic()
        if self.recorded.get(connector) == settled:
            return None  # recorded already: nothing moved since
        # A base compacted since the last row holds the same cut at a newer version: recorded again, so the
        # newest row names versions whose files VACUUM keeps.
        self._append(settled_table_name(pool), settled)
        self.recorded[connector] = settled
        return settled

    def _held(self, mirror: "ZyncModel", version: "TableVersion | None") -> tuple[int, dict[str, int]] | None:
        location = self.versions.location(mirror.table)
        if version is None or location is None:
            return None
        try:
            newest_first = ((v, texts) for first in range(version.version, max(-1, version.version - CURSOR_LOOK_BACK), -1)
                            for v, texts in commit_texts(self.spark, location, first, first))
            return carried_cursor(mirror.relation, newest_first, self.keeping_rows)
        except Exception:  # noqa: BLE001 - a log cleaned up, a table replaced: not known, not settled
            return None

    def _append(self, table: str, settled: Settled) -> None:
        now = datetime.now(timezone.utc)
        committed = (datetime.fromtimestamp(settled.cut.committed_ms / 1000, tz=timezone.utc)
                     if settled.cut.committed_ms is not None else None)
        values = {"connector": settled.connector, "end_offset": settled.cut.end_offset,
                  "transaction": settled.cut.transaction, "committed_at": committed, "settled_at": now,
                  "versions": settled.versions}
        schema = ", ".join(f"`{name}` {kind}" for name, kind in SETTLED_COLUMNS)
        frame = self.spark.createDataFrame([tuple(values[name] for name, _ in SETTLED_COLUMNS)], schema)
        frame.write.format("delta").mode("append").saveAsTable(table)
        self.tables.add(table)
        self.versions.committed(table)

