"""Reading a connector's mirrors at their settled cut without Spark: delta-rs (`deltalake`) over the bases'
Delta logs, in tens of milliseconds a read.

`zync run --settle-every` records in `<pool>__settled` each cut every base of a connector's mirrors holds
exactly, with each base's Delta version (service/settled_cuts.py). Each base read as of its version gives
every mirror after one whole source transaction. Any Delta reader can take them there; the tables are
found where the catalog keeps managed tables, `<warehouse>/<database>.db/<table>`, on a folder or an
object store (zync/storage.py gives delta-rs the same store and credentials as Spark). This is the read
for a dashboard, a notebook or a service that queries often: no JVM, no query planning in Spark.

    cut = newest_settled_cut(warehouse, "zync", "raw_pg", "pg.transaction")
    total = cut.query("select sum(balance) from pg_checking").read_all()
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

from zync import storage
from zync.errors import ZyncError
from zync.tables import MIRROR_BASE_SUFFIX
from zync.transactions import settled_table_name


def _open(uri: str, version: int | None = None):
    from deltalake import DeltaTable

    location, options = storage.delta_rs_table(uri)
    return DeltaTable(location, version=version, storage_options=options or None)


@dataclass(frozen=True)
class SettledCut:
    """A connector's settled cut: the source transaction every mirror shows, and each base's version."""

    connector: str
    end_offset: int  # the END's offset on the connector's transaction topic
    transaction: str | None  # the id of the last whole transaction
    committed_at: datetime | None  # when the source committed it
    versions: dict[str, int]  # mirror (database.name) -> its base's Delta version holding the cut
    warehouse: str

    def tables(self) -> dict[str, object]:
        """Each mirror's short name -> its base as a delta-rs DeltaTable at its version."""
        tables = {}
        for mirror, version in self.versions.items():
            database, name = mirror.split(".", 1)
            tables[name] = _open(storage.managed_table_uri(self.warehouse, database, name + MIRROR_BASE_SUFFIX), version)
        return tables

    def query(self, sql: str):
        """Run `sql` (DataFusion's SQL) over every mirror at the cut, each by its short name; a
        RecordBatchReader (`.read_all()`)."""
        from deltalake import QueryBuilder

        builder = QueryBuilder()
        for name, table in self.tables().items():
            builder.register(name, table)
        return builder.execute(sql)


def newest_settled_cut(warehouse: str | os.PathLike[str], database: str, pool: str,
                       connector: str) -> SettledCut | None:
    """The newest settled cut of `connector` (its transaction topic, e.g. 'pg.transaction') recorded in
    `<pool>__settled`; None while there is none yet."""
    import pyarrow as pa
    from deltalake import QueryBuilder
    from deltalake.exceptions import TableNotFoundError
    from sqlglot import exp, select

    name = settled_table_name(pool)
    try:
        settled = _open(storage.managed_table_uri(warehouse, database, name))
    except TableNotFoundError:
        return None
    newest = (select("end_offset", exp.column("transaction", quoted=True), "committed_at", "versions")
              .from_("settled").where(exp.column("connector").eq(exp.Literal.string(connector)))
              .order_by("end_offset desc", "settled_at desc").limit(1))
    rows = pa.table(QueryBuilder().register("settled", settled).execute(newest.sql("postgres"))).to_pylist()
    if not rows:
        return None
    row = rows[0]
    versions = row["versions"]
    if not isinstance(versions, dict):  # Arrow's map: a list of (key, value) pairs
        versions = dict(versions)
    if not versions:
        raise ZyncError(f"{database}.{name}: the settled cut of {connector} at {row['end_offset']} names no mirror")
    return SettledCut(connector, int(row["end_offset"]), row["transaction"], row["committed_at"],
                      {k: int(v) for k, v in versions.items()}, os.fspath(warehouse))
