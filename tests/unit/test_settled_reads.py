"""Reading mirrors at their settled cut with delta-rs (zync/settled_reads.py), over Delta tables on disk.

The Spark-written tables of a real `zync run` are read the same way in tests/debezium/test_transaction_cut.py.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
from deltalake import write_deltalake

from zync.settled_reads import newest_settled_cut
from zync.storage import managed_table_uri

SETTLED = pa.schema([("connector", pa.string()), ("end_offset", pa.int64()), ("transaction", pa.string()),
                     ("committed_at", pa.timestamp("us", tz="UTC")), ("settled_at", pa.timestamp("us", tz="UTC")),
                     ("versions", pa.map_(pa.string(), pa.int64()))])


def _settled(warehouse, rows: list[tuple]) -> None:
    at = datetime(2026, 3, 1, tzinfo=timezone.utc)
    columns = list(zip(*[(c, e, t, at, at.replace(minute=m), list(v.items())) for c, e, t, m, v in rows]))
    write_deltalake(managed_table_uri(warehouse, "zync", "raw_pg__settled"),
                    pa.table(columns, schema=SETTLED), mode="append")


def _base(warehouse, name: str, versions: list[list[int]]) -> None:
    """A base whose version i holds balances versions[i] (one row per account)."""
    for balances in versions:
        write_deltalake(managed_table_uri(warehouse, "zync", name + "__base"),
                        pa.table({"id": list(range(len(balances))), "balance": balances}), mode="overwrite")


def test_the_newest_settled_cut_is_read_at_each_bases_version(tmp_path):
    warehouse = tmp_path / "warehouse"
    assert newest_settled_cut(warehouse, "zync", "raw_pg", "pg.transaction") is None  # nothing settled yet
    _base(warehouse, "pg_checking", [[100, 100], [90, 100], [90, 100], [90, 80]])  # version 2: compacted
    _base(warehouse, "pg_savings", [[100, 100], [110, 100], [110, 120]])
    _settled(warehouse, [("pg.transaction", 7, "tx7", 1, {"zync.pg_checking": 0, "zync.pg_savings": 0}),
                         ("pg.transaction", 9, "tx9", 2, {"zync.pg_checking": 1, "zync.pg_savings": 1}),
                         ("other.transaction", 50, "o50", 3, {"zync.pg_checking": 2, "zync.pg_savings": 0})])
    # Recorded again after a compaction moved a base: the same cut, the newest row wins.
    _settled(warehouse, [("pg.transaction", 9, "tx9", 4, {"zync.pg_checking": 2, "zync.pg_savings": 1})])

    cut = newest_settled_cut(warehouse, "zync", "raw_pg", "pg.transaction")
    assert (cut.end_offset, cut.transaction, cut.versions) == (9, "tx9", {"zync.pg_checking": 2, "zync.pg_savings": 1})
    (row,) = pa.table(cut.query(
        "select (select sum(balance) from pg_checking) + (select sum(balance) from pg_savings) as total")).to_pylist()
    assert row["total"] == 400  # the transfer of 10 whole (the newest versions make 400 too)
    (row,) = pa.table(cut.query("select sum(balance) as checking from pg_checking")).to_pylist()
    assert row["checking"] == 190  # the version recorded, not the newest (170)
    assert newest_settled_cut(warehouse, "zync", "raw_pg", "none.transaction") is None
