"""VACUUM of the tables `zync run` compacts, once the files a compaction removed are older than a retention.

A compaction (service/compaction.py) replaces small files by larger ones in
the table's log, but the replaced files stay on disk: Delta keeps them so
that time travel to the versions before it keeps working. Left alone, a
table's folder grows with every compaction. So `zync run` remembers when it
compacted each table and, --vacuum-retention later (default 7 days, Delta's
own default), VACUUMs it with that retention: the files removed before then
go, every version within the retention keeps its files (time travel to it
still works). A mirror fold's MERGE rewrites files too; the same VACUUM takes
those. A restarted run reads the table's last OPTIMIZE time from its history
(service/compaction.py compaction_state), so a restart does not forget it.

Two session settings, set for the VACUUM statement only:
- `retentionDurationCheck.enabled=false`: Delta refuses a retention under the
  table's `delta.deletedFileRetentionDuration` (7 days) unless this is off.
  The table property would do it for good, but setting it is a commit:
  `zync run` would read the raw tables' new metadata as a schema change and
  fold every mirror again, and the table's policy would change for every
  other process. The retention is this run's choice, so it is said here.
- `vacuum.logging.enabled=false`: with logging Delta records VACUUM START and
  END commits; those move the table's version, which makes the models over a
  raw table run again and an output be published again, for nothing.
A retention shorter than the longest query over the table (a backfill, a
hand-run `dbt run`, a reader's time travel) can delete files that query still
reads: keep it above that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from zync.spark import session_conf

DEFAULT_VACUUM_RETENTION_S = 7 * 24 * 3600.0
LISTING_TASKS = 4


@dataclass(frozen=True)
class Vacuum:
    table: str
    files_deleted: int
    seconds: float


def vacuum_settings() -> dict[str, str]:
    return {"spark.databricks.delta.retentionDurationCheck.enabled": "false",
            "spark.databricks.delta.vacuum.logging.enabled": "false",
            # VACUUM lists the table's folder in this many Spark tasks (Spark's default, 10,000, is for
            # tables of millions of files on a cluster: here it made one VACUUM of a small table ~10,000
            # tasks and minutes; a table's folder is listed in seconds by a few).
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(LISTING_TASKS)}


def vacuum(spark, table: str, retention_s: float) -> Vacuum:
    """VACUUM `table`, keeping the files removed within the last `retention_s` seconds."""
    started = time.monotonic()
    hours = f"{retention_s / 3600:.6f}"
    with session_conf(spark, vacuum_settings()):
        # DRY RUN lists what the VACUUM deletes (Delta's VACUUM itself returns only the table's path).
        deleted = spark.sql(f"vacuum {table} retain {hours} hours dry run").count()
        spark.sql(f"vacuum {table} retain {hours} hours").collect()
    return Vacuum(table, deleted, time.monotonic() - started)


class VacuumSchedule:
    """When each table is due a VACUUM: --vacuum-retention after a compaction not yet vacuumed."""

    def __init__(self, retention_s: float = DEFAULT_VACUUM_RETENTION_S):
        if retention_s < 0:
            raise ValueError(f"--vacuum-retention must be 0 or more, not {retention_s}")
        self.retention_s = retention_s
        # table -> epoch seconds of the oldest and the newest compaction not vacuumed yet
        self._compacted: dict[str, tuple[float, float]] = {}

    def compacted(self, table: str, at: float) -> None:
        """A compaction of `table` at `at` (epoch seconds) removed files."""
        oldest = self._compacted.get(table, (at, at))[0]
        self._compacted[table] = (min(oldest, at), at)

    def due(self, now: float) -> list[str]:
        return sorted(t for t, (oldest, _) in self._compacted.items() if now - oldest >= self.retention_s)

    def vacuumed(self, table: str, now: float) -> None:
        """`table` was vacuumed at `now`: the files of compactions within the retention are still there."""
        oldest, newest = self._compacted.pop(table, (now, now))
        if now - newest < self.retention_s:
            self._compacted[table] = (newest, newest)  # due again when the newest one's files are old enough

    def known(self, table: str) -> bool:
        return table in self._compacted
