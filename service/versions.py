"""Delta table versions by catalog name, read from the tables' logs: how `zync run` knows what moved.

Reading a table's latest version lists its _delta_log folder (no Spark job,
milliseconds; zync/delta_metadata.py), so a cycle with nothing new costs a few
of these and no query. A table's location is looked up once. Whether a table is there is read from
its database's list of tables (one catalog call answers for all of them), listed again after
ABSENT_RECHECK_S, or at once when this process may have made a table in it (made()).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from zync.delta_metadata import commit_texts, held_version, latest_version, table_location
from zync.pools import changed_topics, file_topics
from zync.spark_internals import catalog_table_names


class TableVersion(NamedTuple):
    """A table's identity and log version: a table dropped and made again has a new id."""

    table_id: str
    version: int


class Growth(NamedTuple):
    """What a run of commits did to a table."""

    commits: int
    rows: int | None  # rows they added (None: a file without a record count)
    schema_changed: bool  # one of them set the table's metadata (its schema, or its properties)


KEPT_SUMMARIES = 2_000  # commits of a table whose summaries are kept
# Newest commits of a table whose actions' text is kept: a cycle's growth count and its metrics read the
# commit it just made, and on an object store each read of a commit file is two requests (HEAD, GET).
KEPT_TEXTS = 4
# How long a database's list of tables is taken as it is without asking the catalog again. A whole
# database's mirrors whose bases are not built yet (their views read the raw changes) are asked about
# every cycle; asked one by one (a metastore call each, several round trips to its database), they
# were most of a cycle's time beside the ingest of a pool (profiles of bench/wide.py, 50 tables).
# What this process makes it says (made()); another process's table is seen this much later, which
# delays only its fold's choice and its compaction.
ABSENT_RECHECK_S = 5.0


@dataclass(frozen=True)
class CommitSummary:
    """What one commit did, as growth counts it: read once from the commit's actions."""

    rows: int | None  # rows its files added (None: a file without a count)
    schema_changed: bool  # it set the table's metadata
    changed_topics: frozenset[str]  # a raw pool's: the topics whose types it changed
    topic_rows: dict[str, int]  # a raw pool's: rows per topic of its files (zync/pools.py file_topics)

    @classmethod
    def of(cls, texts: list[str]) -> "CommitSummary":
        rows: int | None = 0
        schema_changed, changed, topic_rows = False, frozenset(), {}
        for text in texts:
            if text.startswith('{"metaData":'):  # a new schema (or table properties)
                schema_changed, changed = True, frozenset(changed_topics(text))
            elif text.startswith('{"add":'):  # (a commitInfo's text is not always valid JSON)
                added = json.loads(text)["add"]
                if not added.get("dataChange", True):
                    continue  # a compaction's rewrite of rows already there (service/compaction.py)
                stats = json.loads(added.get("stats") or "{}")
                records = stats.get("numRecords")
                rows = None if rows is None or records is None else rows + int(records)
                for topic, held in file_topics(added, stats).items():
                    topic_rows[topic] = topic_rows.get(topic, 0) + held["rows"]
        return cls(rows, schema_changed, changed, topic_rows)


class TableVersions:
    """Latest Delta versions of tables by catalog name (database.table); None for a table not there yet."""

    def __init__(self, spark):
        self.spark = spark
        self._locations: dict[str, str] = {}
        self._texts: dict[tuple[str, str], dict[int, list[str]]] = {}  # (location, table id) -> version -> actions
        self._commits: dict[tuple[str, str], dict[int, CommitSummary]] = {}  # (location, table id) -> version ->
        self._committed: dict[str, TableVersion] = {}  # name -> the version this process's commit made, this cycle
        # database -> (when listed, monotonic; its tables' names)
        self._listed: dict[str, tuple[float, frozenset[str]]] = {}

    def _location(self, name: str) -> str | None:
        if name not in self._locations:
            if not self._listed_in_database(name):
                return None
            self._locations[name] = table_location(self.spark, _quoted(name))
        return self._locations[name]

    def _listed_in_database(self, name: str) -> bool:
        database, _, table = name.rpartition(".")
        listed = self._listed.get(database)
        if listed is None or time.monotonic() - listed[0] >= ABSENT_RECHECK_S:
            listed = self._listed[database] = (time.monotonic(), catalog_table_names(self.spark, database))
        return table.lower() in listed[1]

    def made(self, names: Iterable[str] | None = None) -> None:
        """Tables this process may just have made (all, when None): look them up again at their next use."""
        if names is None:
            self._listed.clear()
        for name in names or ():
            self._listed.pop(name.rpartition(".")[0], None)

    def location(self, name: str) -> str | None:
        """The table's storage location (a URI, e.g. file:/...), or None if it is not there."""
        return self._location(name)

    def committed(self, name: str) -> None:
        """Take the version this process's commit to the table just made as its latest until forget_commits().

        The commit's transaction listed the log a moment before: listing it again in the same cycle (a
        request to an object store, each time a stage asks) would tell a change by another writer since
        then, which the next cycle's own listing tells as well. If the engine cannot say, nothing is taken."""
        self.made([name])
        try:
            location = self._location(name)
            if location is None:
                return
            version, table_id = held_version(self.spark, location)
        except Exception:  # noqa: BLE001 - then version() lists the log, as it does for any other table
            return
        if table_id is not None:
            self._committed[name] = TableVersion(table_id, version)

    def forget_commits(self) -> None:
        self._committed.clear()

    def version(self, name: str) -> TableVersion | None:
        if name in self._committed:
            return self._committed[name]
        location = self._location(name)
        if location is None:
            return None
        version, table_id = latest_version(self.spark, location)
        if table_id is None:  # dropped (and perhaps made again elsewhere): look the name up again next time
            self._locations.pop(name, None)
            return None
        return TableVersion(table_id, version)

    def rows_added(self, name: str, since: TableVersion | None, until: TableVersion | None,
                   topic: str | None = None) -> int | None:
        """Rows the commits after `since` up to `until` added to the table (its log's add actions' statistics).

        None when that cannot be told: either version missing, the table made
        again in between, a commit's log gone (cleaned up), or a file without
        a record count. Reads only those commits' JSON (no Spark job).
        `topic`: only that topic's rows of a raw pool (see growth).
        """
        growth = self.growth(name, since, until, topic)
        return None if growth is None else growth.rows

    def growth(self, name: str, since: TableVersion | None, until: TableVersion | None,
               topic: str | None = None) -> "Growth | None":
        """What the commits after `since` up to `until` did to the table, read from their JSON (no Spark job).

        None when the commits cannot be read: either version missing, the table
        made again in between, a commit's log gone (cleaned up).
        `topic`: what they did to one topic of a raw pool (ingest/pool.py), which writes a file per topic
        and names the topics whose types a commit changed: the commits with a file of the topic, its
        rows, and whether its types changed. Each commit is read once (CommitSummary) however many
        mirrors of a pool ask.
        """
        if since is None or until is None or since.table_id != until.table_id:
            return None
        if until.version <= since.version:
            return Growth(0, 0, False)
        location = self._location(name)
        if location is None:
            return None
        summaries = self._summaries(location, until.table_id, since.version + 1, until.version)
        if summaries is None:
            return None
        commits, rows, schema_changed = 0, 0, False
        for summary in summaries:
            changed = summary.schema_changed if topic is None else topic in summary.changed_topics
            added = summary.rows if topic is None else summary.topic_rows.get(topic, 0)
            if topic is None or changed or topic in summary.topic_rows:
                commits += 1
            schema_changed = schema_changed or changed
            rows = None if rows is None or added is None else rows + added
        return Growth(commits, rows, schema_changed)

    def _summaries(self, location: str, table_id: str, start: int, end: int) -> "list[CommitSummary] | None":
        """The summaries of commits `start` to `end`, read from the log where not known yet; None if a
        commit cannot be read."""
        known = self._commits.setdefault((location, table_id), {})
        missing = [v for v in range(start, end + 1) if v not in known]
        if missing:
            try:
                for version, texts in self._commit_texts(location, table_id, missing[0], missing[-1]):
                    known[version] = CommitSummary.of(texts)
            except Exception:  # noqa: BLE001 - a log cleaned up, a table replaced: not known
                return None
            for version in sorted(known)[:-KEPT_SUMMARIES]:  # the oldest go: a count reads on from the last
                del known[version]
        if any(v not in known for v in range(start, end + 1)):
            return None
        return [known[v] for v in range(start, end + 1)]

    def rows_appended(self, name: str, until: TableVersion | None, most_commits: int,
                      topic: str | None = None) -> int | None:
        """Rows the table's commits up to `until` added, counted only if it has at most `most_commits` commits.

        A raw table is only appended to, so these are all the rows a model reads in a first build. None
        when they cannot be read (as for growth) or the table has more commits: each is read from its JSON.
        """
        if until is None or until.version >= most_commits:
            return None
        return self.rows_added(name, TableVersion(until.table_id, -1), until, topic)

    def commits(self, name: str, since: TableVersion | None, until: TableVersion | None) -> list[list[str]] | None:
        """The actions (their JSON text) of each commit after `since` up to `until`, oldest first.

        None when they cannot be read (as for growth). Reads only those commits' JSON (no Spark job).
        """
        if since is None or until is None or since.table_id != until.table_id:
            return None
        if until.version <= since.version:
            return []
        location = self._location(name)
        if location is None:
            return None
        try:
            found = [texts for _, texts in self._commit_texts(location, until.table_id, since.version + 1, until.version)]
        except Exception:  # noqa: BLE001 - a log cleaned up, a table replaced: not known
            return None
        return found if len(found) == until.version - since.version else None

    def _commit_texts(self, location: str, table_id: str, start: int, end: int) -> list[tuple[int, list[str]]]:
        """(version, its actions' text) of commits `start` to `end`, the newest few kept: a commit file
        never changes, and a table made again has a new id."""
        kept = self._texts.setdefault((location, table_id), {})
        missing = [v for v in range(start, end + 1) if v not in kept]
        if missing:
            kept.update(commit_texts(self.spark, location, missing[0], missing[-1]))
        found = [(v, kept[v]) for v in range(start, end + 1) if v in kept]
        for version in sorted(kept)[:-KEPT_TEXTS]:
            del kept[version]
        return found

    def versions(self, names) -> dict[str, TableVersion | None]:
        return {name: self.version(name) for name in names}


def _quoted(name: str) -> str:
    return ".".join(f"`{part}`" for part in name.split("."))
