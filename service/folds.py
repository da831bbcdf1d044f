"""Which mirrors a `zync run` cycle folds.

A mirror is merge-on-read (macros/mirror/materialization/zync_mirror.sql): its
name is a view of its base table plus the raw changes past the base's cursor,
so what ingest commits is visible by the mirror's name at once, with no
`dbt run`. A run of a mirror is a fold: it MERGEs those changes into the base
and makes the view anew with the new cursor. Folding keeps the view's share of
the raw table small; it is not what makes a change visible. So a cycle does
not run a mirror because its raw table moved (a run costs seconds per mirror,
whatever it folds), only when one of these holds:
- it has no base yet (never built, or stored as a table before mirrors had
  one: the run makes its base and its view), or its last fold is not known
  to this run; except a mirror whose last run here made its view alone
  (`deferred`: a first build over few raw rows, macros/mirror/materialization/
  zync_mirror_defers_base.sql): its view shows every change already, and it
  is counted as a mirror folded at that run, its first fold making its base;
- its raw table's schema (or properties) changed since its last fold: new
  columns reach the view only through a fold, and a view over a grown schema
  may fail until then;
- its raw table gained `after_commits` commits or `after_rows` rows since (a
  pooled topic: `after_rows` of its own rows, whatever the pool's commits);
- the run folds everything that moved (`zync run --once`);
- with settled cuts on (`zync run --settle-every DUR`), it keeps its
  connector's transaction cut (`consistency: transaction`) and another
  mirror of the connector folds in this cycle: a connector's mirrors whose
  topics gained rows fold together, whatever the bounds below, so that
  their bases hold one cut (service/settled_cuts.py); and they all fold
  when the connector's last settled cut is older than DUR. Off by
  default: a fold of several mirrors at once stalls the cycle (4 mirrors
  at the cut: 32-45 s against 3.5-20 s for one, beside a reader,
  tests/debezium/test_pooled_read_profile.py).
Every mirror without a base is built in the cycle that finds it: until then
its name shows nothing, and a whole database's first build in one `dbt run`
pays dbt's start and its listing of the schema's relations once, where a
bound of 4 a cycle would pay them 50 times at 200 tables. Of the other folds,
at most `per_cycle` run in one cycle (0: no bound at all), a changed schema
first, then the most commits behind: a burst over many tables spreads its
folds over the following cycles instead of stalling one. Of the folds due
only by growth, at most one runs in a cycle, the one grown furthest past
its threshold (commits or rows, whichever is further), and only in a cycle with no
other fold or first build: under a steady stream every mirror reaches its
threshold in the same cycle, and folding them together stalled that cycle
(bench/soak.py: 30-50 s cycles every ~10 minutes, against 12 s). One a
cycle, they stay spread out, since each counts from its own last fold. Only
Delta logs are read to decide (service/versions.py), counted on from where
the last cycle stopped, so a cycle with mirrors waiting costs a log listing
and a commit file per mirror and raw table.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING

from service.versions import TableVersion, TableVersions

if TYPE_CHECKING:  # the CLI reads this module's defaults without loading dbt
    from service.project import ZyncModel

FOLD_AFTER_COMMITS = 50
FOLD_AFTER_ROWS = 100_000
FOLDS_PER_CYCLE = 4
SETTLE_EVERY_S = 0.0  # settled cuts off: a connector's mirrors at its cut fold as any others
NO_BASE = 0  # the urgency of a mirror's first build (unbounded a cycle)
GROWN = 3  # the urgency of a fold due only by its raw table's growth


@dataclass(frozen=True)
class Counted:
    """A raw table's growth since a mirror's last fold, counted up to `until`."""

    since: TableVersion
    until: TableVersion
    commits: int
    rows: int | None
    schema_changed: bool


class FoldPolicy:
    def __init__(self, versions: TableVersions, after_commits: int = FOLD_AFTER_COMMITS,
                 after_rows: int = FOLD_AFTER_ROWS, per_cycle: int = FOLDS_PER_CYCLE):
        for what, value in (("--fold-after-commits", after_commits), ("--fold-after-rows", after_rows),
                            ("--folds-per-cycle", per_cycle)):
            if value < 0:
                raise ValueError(f"{what} must be 0 or more, not {value}")
        self.versions = versions
        self.after_commits = after_commits
        self.after_rows = after_rows
        self.per_cycle = per_cycle
        self.counted: dict[tuple[str, str], Counted] = {}  # (mirror, raw table) -> its growth

    def choose(self, due: dict[str, dict[str, TableVersion | None]], models: list["ZyncModel"],
               ran_at: dict[str, dict[str, TableVersion | None]], everything: bool = False,
               deferred: AbstractSet[str] = frozenset(),
               settling: AbstractSet[str] | None = None,
               lagging: AbstractSet[str] = frozenset()) -> dict[str, dict[str, TableVersion | None]]:
        """`due` (model -> the raw versions it would run at) less the mirrors that need no fold yet.

        Outputs are kept as they are. `ran_at`: the raw versions each model's
        last successful run saw. everything: every due mirror folds, unbounded.
        deferred: the mirrors whose last run here made their view and no base.
        settling: None when settled cuts are off (`zync run --settle-every 0`); else the connectors
        (transaction topics) whose mirrors all fold now, and a connector's mirrors fold together whenever
        one of them folds, every one whose topic grew, so that their bases settle on the cut
        (service/settled_cuts.py). lagging: mirrors whose bases were found not to hold their
        connector's cut; they fold with the others whether they grew or not.
        """
        mirrors = {m.name: m for m in models if m.kind == "mirror" and m.name in due}
        if everything:
            return due
        ranked: list[tuple[tuple, str]] = []
        for name, model in mirrors.items():
            urgency = self._urgency(model, due[name], ran_at.get(name), name in deferred)
            if urgency is not None:
                ranked.append((urgency, name))
        ranked.sort()
        if not self.per_cycle:
            chosen = {name for _, name in ranked}
        else:
            first = {name for urgency, name in ranked if urgency[0] == NO_BASE}
            needed = [name for urgency, name in ranked if NO_BASE < urgency[0] < GROWN]
            grown = [name for urgency, name in ranked if urgency[0] == GROWN]
            chosen = first | set(needed[:self.per_cycle] or ([] if first else grown[:1]))
        if settling is not None:
            chosen |= self._settling_with(chosen, settling, lagging, mirrors, due, ran_at)
        return {name: seen for name, seen in due.items() if name not in mirrors or name in chosen}

    def _settling_with(self, chosen: set[str], settling: AbstractSet[str], lagging: AbstractSet[str],
                       mirrors: dict[str, "ZyncModel"],
                       due: dict[str, dict[str, TableVersion | None]],
                       ran_at: dict[str, dict[str, TableVersion | None]]) -> set[str]:
        """The mirrors that fold with the chosen ones: of each connector whose cut a chosen mirror keeps,
        every other mirror whose topic gained rows since its last fold. Each fold takes its changes up to
        the cut as it stands (macros/mirror/cursor/zync_mirror_cut_cursor.sql), so the connector's bases
        then hold one cut together, which a reader takes whole from the bases alone
        (service/settled_cuts.py); a mirror whose topic gained nothing holds that cut already."""
        connectors = {mirrors[name].cut_of for name in chosen if name in mirrors and mirrors[name].cut_of} | settling
        return {name for name, model in mirrors.items()
                if model.cut_of in connectors and name not in chosen
                and (name in lagging or self._grew(model, due[name], ran_at.get(name)))}

    def _grew(self, model: "ZyncModel", seen: dict[str, TableVersion | None],
              last: dict[str, TableVersion | None] | None) -> bool:
        """Whether a mirror's raw rows (its topic's, in a raw pool) grew since its last fold, as this
        choice counted them; True when it did not count them."""
        if last is None:
            return True
        for table, version in seen.items():
            counted = self.counted.get((model.name, table))
            if counted is None or counted.since != last.get(table) or counted.until != version \
                    or counted.rows is None or counted.rows > 0:
                return True
        return False

    def _urgency(self, model: "ZyncModel", seen: dict[str, TableVersion | None],
                 last: dict[str, TableVersion | None] | None, deferred: bool = False) -> tuple | None:
        """How soon a mirror must fold (smaller first), or None if it need not fold yet."""
        if self.versions.version(model.table) is None and not (deferred and last is not None):
            return (NO_BASE, 0)  # no base: never built, or a table-style mirror to make into its base and view
        if last is None:
            return (1, 0)
        commits, rows, schema_changed = 0, 0, False
        topics = {i.table: i.pool_topic for i in model.inputs}
        for table, version in seen.items():
            counted = self._count(model.name, table, last.get(table), version, topics.get(table))
            if counted is None:
                return (1, 0)  # its growth cannot be read (a table made again, its log cleaned up)
            # A raw table's commits lengthen the log its view lists; a raw pool's are one log for every
            # topic, which the pool's compaction keeps short: a pooled mirror folds by its rows alone.
            commits += 0 if topics.get(table) else counted.commits
            schema_changed = schema_changed or counted.schema_changed
            rows = None if rows is None or counted.rows is None else rows + counted.rows
        if schema_changed:
            return (2, -commits)
        # How many times over its threshold a mirror has grown ranks the folds due by growth: by commits
        # alone, a pooled mirror (which counts none) lost the one growth fold a cycle to every mirror of a
        # raw table of its own while those grew, and was never folded: its view then read its topic's
        # whole history at every query.
        overdue = max(commits / max(self.after_commits, 1), (rows or 0) / max(self.after_rows, 1))
        if overdue >= 1:
            return (GROWN, -overdue)
        return None

    def _count(self, mirror: str, table: str, since: TableVersion | None, until: TableVersion | None,
               topic: str | None = None) -> Counted | None:
        """The raw table's growth from `since` (the last fold's) to `until`, read on from the last count
        (of `topic` alone, in a raw pool)."""
        if since is None or until is None:
            return None
        known = self.counted.get((mirror, table))
        if known is not None and known.since == since and known.until.table_id == until.table_id \
                and known.until.version <= until.version:
            more = self.versions.growth(table, known.until, until, topic)
            if more is not None:
                rows = None if known.rows is None or more.rows is None else known.rows + more.rows
                counted = Counted(since, until, known.commits + more.commits, rows,
                                  known.schema_changed or more.schema_changed)
                self.counted[(mirror, table)] = counted
                return counted
        growth = self.versions.growth(table, since, until, topic)
        if growth is None:
            self.counted.pop((mirror, table), None)
            return None
        counted = self.counted[(mirror, table)] = Counted(since, until, *growth)
        return counted
