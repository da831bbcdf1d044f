"""What `zync run`'s compaction rewrites, on real Spark and Delta: the small files, not a larger
compacted file that they do not outweigh (tests/unit/test_compaction_tiers.py has the rule's bounds)."""

from __future__ import annotations

import uuid

from service.compaction import compact
from zync.delta_metadata import table_location


def _table(spark, files: list[int]) -> tuple[str, str]:
    """A Delta table of one file per entry of `files` (that many rows each), one commit per file."""
    name = f"default.compaction_{uuid.uuid4().hex[:8]}"
    for i, rows in enumerate(files):
        frame = spark.range(rows).selectExpr(f"id + {i * 1_000_000} as id", "uuid() as payload").coalesce(1)
        frame.write.format("delta").mode("append").saveAsTable(name)
    return name, table_location(spark, name)


def _live(spark, name: str) -> dict[str, int]:
    """Rows in each of the table's live files, by file name."""
    rows = spark.sql(f"select input_file_name() as file, count(*) as n from {name} group by 1").collect()
    return {r["file"].rsplit("/", 1)[-1]: r["n"] for r in rows}


def test_small_files_are_compacted_and_a_larger_file_they_do_not_outweigh_is_left_alone(spark):
    name, location = _table(spark, [20_000] + [10] * 5)
    before = _live(spark, name)
    assert sorted(before.values()) == [10] * 5 + [20_000]
    done = compact(spark, name, location)
    assert (done.files_removed, done.files_added) == (5, 1)
    assert 0 < done.bytes_removed
    after = _live(spark, name)
    larger = max(before, key=before.get)
    assert after == {larger: 20_000, **{f: 50 for f in after if f != larger}} and len(after) == 2, (before, after)
    assert spark.table(name).count() == 20_050
    spark.sql(f"drop table {name}")


def test_files_of_about_one_size_are_compacted_together(spark):
    name, location = _table(spark, [300] * 6)
    done = compact(spark, name, location)
    assert (done.files_removed, done.files_added) == (6, 1)
    assert spark.table(name).count() == 1_800
    assert compact(spark, name, location).files_removed == 0  # one file: nothing left to do
    spark.sql(f"drop table {name}")
