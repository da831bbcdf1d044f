"""What `zync run`'s compaction rewrites, on real Spark and Delta: the small files, not a larger
compacted file that they do not outweigh (tests/unit/test_compaction_tiers.py has the rule's bounds);
and the count of commits since a table's last compaction, read from its commit files as DESCRIBE
HISTORY reads it."""

from __future__ import annotations

import uuid

from service.compaction import compact, compaction_state
from zync.delta_metadata import history, history_from_files, table_location


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


def test_the_history_read_from_commit_files_is_describe_historys(spark):
    name, location = _table(spark, [300] * 3)
    compact(spark, name, location)
    spark.sql(f"alter table {name} set tblproperties ('zync.test' = 'x')")
    with_note = spark.range(5).selectExpr("id + 9000000 as id", "uuid() as payload")
    with_note.write.format("delta").mode("append").option("userMetadata", '{"note": 1}').saveAsTable(name)

    described = history(spark, name, 10)
    from_files = history_from_files(location, 10)
    assert [(e.version, e.operation, e.user_metadata) for e in from_files] == \
        [(e.version, e.operation, e.user_metadata) for e in described]
    assert [e.operation for e in from_files] == ["WRITE", "SET TBLPROPERTIES", "OPTIMIZE", "WRITE", "WRITE",
                                                "CREATE TABLE AS SELECT"]
    assert from_files[0].user_metadata == '{"note": 1}'
    for found, expected in zip(from_files, described):
        assert abs(found.timestamp.timestamp() - expected.timestamp.timestamp()) < 1.0, (found, expected)
    assert history_from_files(location, 2) == from_files[:2]
    # One commit since the OPTIMIZE that added a file (the properties' adds none), however the history
    # is read.
    assert compaction_state(spark, name, 10, location) == compaction_state(spark, name, 10)
    assert compaction_state(spark, name, 10, location)[0] == 1
    assert compaction_state(spark, name, 1, location) == (1, None)
    spark.sql(f"drop table {name}")


def test_a_new_tables_empty_create_and_properties_do_not_bring_compaction_closer(spark):
    """Ingest creates a database's new raw table empty, then writes its first batch: one file, one
    commit counted, so --compact-after 2 does not compact a table of one file."""
    name = f"default.compaction_{uuid.uuid4().hex[:8]}"
    spark.sql(f"create table {name} (id bigint) using delta")
    spark.sql(f"insert into {name} values (1), (2)")
    spark.sql(f"alter table {name} set tblproperties ('zync.test' = 'x')")
    assert compaction_state(spark, name, 10, table_location(spark, name)) == (1, None)
    spark.sql(f"insert into {name} values (3)")
    assert compaction_state(spark, name, 10, table_location(spark, name)) == (2, None)
    spark.sql(f"drop table {name}")


def test_a_history_not_on_this_machine_is_described(spark):
    assert history_from_files("hdfs://elsewhere/table", 10) is None
    name, location = _table(spark, [10])
    assert [e.operation for e in history(spark, name, 10, "hdfs://elsewhere/table")] == ["CREATE TABLE AS SELECT"]
    spark.sql(f"drop table {name}")
