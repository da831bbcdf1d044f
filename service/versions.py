"""Delta table versions by catalog name, read from the tables' logs: how `zync run` knows what moved.

Reading a table's latest version lists its _delta_log folder (no Spark job,
milliseconds; zync/delta_metadata.py), so a cycle with nothing new costs a few
of these and no query. A table's location is looked up once.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from zync.delta_metadata import commit_texts, latest_version, table_location
from zync.pools import changed_topics, file_topic


class TableVersion(NamedTuple):
    """A table's identity and log version: a table dropped and made again has a new id."""

    table_id: str
    version: int


class Growth(NamedTuple):
    """What a run of commits did to a table."""

    commits: int
    rows: int | None  # rows they added (None: a file without a record count)
    schema_changed: bool  # one of them set the table's metadata (its schema, or its properties)


class TableVersions:
    """Latest Delta versions of tables by catalog name (database.table); None for a table not there yet."""

    def __init__(self, spark):
        self.spark = spark
        self._locations: dict[str, str] = {}

    def _location(self, name: str) -> str | None:
        if name not in self._locations:
            if not self.spark.catalog.tableExists(name):
                return None
            self._locations[name] = table_location(self.spark, _quoted(name))
        return self._locations[name]

    def location(self, name: str) -> str | None:
        """The table's storage location (a URI, e.g. file:/...), or None if it is not there."""
        return self._location(name)

    def version(self, name: str) -> TableVersion | None:
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
        rows, and whether its types changed.
        """
        if since is None or until is None or since.table_id != until.table_id:
            return None
        if until.version <= since.version:
            return Growth(0, 0, False)
        location = self._location(name)
        if location is None:
            return None
        try:
            rows, seen, touched, schema_changed = 0, 0, 0, False
            for _, texts in commit_texts(self.spark, location, since.version + 1, until.version):
                seen += 1
                mine = topic is None
                for text in texts:
                    if text.startswith('{"metaData":'):  # a new schema (or table properties)
                        if topic is None or topic in changed_topics(text):
                            schema_changed = mine = True
                    elif text.startswith('{"add":') and rows is not None:  # (a commitInfo's text is not always valid JSON)
                        added = json.loads(text)["add"]
                        if not added.get("dataChange", True):
                            continue  # a compaction's rewrite of rows already there (service/compaction.py)
                        stats = json.loads(added.get("stats") or "{}")
                        if topic is not None and file_topic(stats) != topic:
                            continue
                        mine = True
                        records = stats.get("numRecords")
                        rows = None if records is None else rows + int(records)
                touched += mine
        except Exception:  # noqa: BLE001 - a log cleaned up, a table replaced: not known
            return None
        return Growth(touched, rows, schema_changed) if seen == until.version - since.version else None

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
            found = [texts for _, texts in commit_texts(self.spark, location, since.version + 1, until.version)]
        except Exception:  # noqa: BLE001 - a log cleaned up, a table replaced: not known
            return None
        return found if len(found) == until.version - since.version else None

    def versions(self, names) -> dict[str, TableVersion | None]:
        return {name: self.version(name) for name in names}


def _quoted(name: str) -> str:
    return ".".join(f"`{part}`" for part in name.split("."))
