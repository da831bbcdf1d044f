"""Mirror semantics on real Spark/Delta and dbt, with raw tables written directly by Spark.

One scenario, run once for the module (dbt runs are the slow part): a hard
and a soft mirror of the same raw table, three `dbt run`s over three raw
batches; the tests check what each run left.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field

import pytest

from tests.mirrors.conftest import append_raw, change, drop_tables, mirror_project, rows

TOPIC = "mir_Rules"
RAW = "mir_raw_rules"
MIRRORS = f"""\
mirrors:
  - model: mir_rules_hard
    topic: {TOPIC}
    table: {RAW}
  - model: mir_rules_soft
    topic: {TOPIC}
    table: {RAW}
    delete: soft
"""
TABLES = (RAW, "mir_rules_hard", "mir_rules_soft")

BATCH_1 = [  # the initial snapshot, source time 100
    change(TOPIC, 0, "r", 1, "one", ts=100),
    change(TOPIC, 1, "r", 2, "two", ts=100),
    change(TOPIC, 2, "r", 3, "three", ts=100),
    change(TOPIC, 3, "r", 5, "five", ts=100),
    change(TOPIC, 4, "r", 7, "seven", ts=100),
    change(TOPIC, 0, "r", 12, "twelve", ts=100, partition=2),
]
BATCH_2 = [
    change(TOPIC, 5, "u", 1, "one-a", ts=200),
    change(TOPIC, 6, "u", 1, "one-b", ts=210),      # several changes to a key: the last wins
    change(TOPIC, 7, "d", 2, ts=1_700_000_000_000),  # a delete...
    change(TOPIC, 8, None, 2),                       # ...and its Kafka tombstone, ignored
    change(TOPIC, 9, "d", 3, ts=220),                # delete then re-create in one run: present
    change(TOPIC, 10, "c", 3, "three-again", ts=230),
    change(TOPIC, 11, "c", 4, "four", ts=240),
    change(TOPIC, 12, "u", 4, "four-b", ts=250),
    change(TOPIC, 13, "d", 5, ts=400),
    change(TOPIC, 14, "r", 5, "five-stale", ts=150),  # a re-snapshot read older than the delete before it
    change(TOPIC, 2, "u", 7, "below-the-cursor", ts=50),  # offset below the cursor: never read again (older than the read at 4, so a rebuild agrees)
    change(TOPIC, 15, "c", 8, "eight", ts=270, email="eight@example.com"),  # a new value field
    change(TOPIC, 1, "u", 12, "twelve-b", ts=300, partition=2),  # an update and its delete in one run:
    change(TOPIC, 2, "d", 12, ts=310, partition=2),               # soft keeps the update's values
    change(TOPIC, 3, "c", 11, "eleven", ts=320, partition=2),     # a create, an update and the delete in one run:
    change(TOPIC, 4, "u", 11, "eleven-b", ts=330, partition=2),   # soft keeps the update's values
    change(TOPIC, 5, "d", 11, ts=340, partition=2),
]
BATCH_3 = [  # a re-snapshot taken at time 150, before batch 2's changes, plus one newer read
    change(TOPIC, 16, "r", 2, "two-stale", ts=150),
    change(TOPIC, 17, "r", 1, "one-stale", ts=150),
    change(TOPIC, 18, "r", 9, "nine", ts=500),
    change(TOPIC, 0, "c", 10, "ten", ts=510, partition=1),  # another partition has its own cursor
]
LIVE_ROWS = "select ID, name, _zync_op from zync.{} where {} order by ID"
SOFT_DELETED_ROWS = "select ID, name, cast(_zync_deleted_at as string) from zync.mir_rules_soft where _zync_deleted order by ID"


@dataclass
class Scenario:
    project: object
    after: dict[str, list[tuple]] = field(default_factory=dict)  # "<model>@<run>" -> rows
    first_version: int = 0
    first_commit_time: str = ""
    rebuilt_soft_deleted: list[tuple] = field(default_factory=list)


@pytest.fixture(scope="module")
def scenario(spark, tmp_path_factory):
    drop_tables(spark, *TABLES)
    project = mirror_project(tmp_path_factory.mktemp("mir_rules") / "project", {"mirrors.yml": MIRRORS}, spark)
    result = Scenario(project)
    for run, batch in enumerate((BATCH_1, BATCH_2, BATCH_3), start=1):
        extra = ("email",) if run >= 2 else ()
        append_raw(spark, RAW, batch, extra)
        if run > 1:  # ingested, not folded yet: the mirrors' views already apply the batch
            result.after[f"hard@{run}-unfolded"] = rows(spark, LIVE_ROWS.format("mir_rules_hard", "true"))
            result.after[f"soft@{run}-unfolded"] = rows(spark, LIVE_ROWS.format("mir_rules_soft", "not _zync_deleted"))
            result.after[f"soft-deleted@{run}-unfolded"] = rows(spark, SOFT_DELETED_ROWS)
        project.dbt("run", "--select", "mir_rules_hard", "mir_rules_soft")
        result.after[f"hard@{run}"] = rows(spark, LIVE_ROWS.format("mir_rules_hard", "true"))
        result.after[f"soft@{run}"] = rows(spark, LIVE_ROWS.format("mir_rules_soft", "not _zync_deleted"))
        result.after[f"soft-deleted@{run}"] = rows(spark, SOFT_DELETED_ROWS)
        if run == 1:
            history = spark.sql("describe history zync.mir_rules_hard__base").orderBy("version", ascending=False).first()
            result.first_version, result.first_commit_time = history["version"], str(history["timestamp"])
    project.dbt("run", "--select", "mir_rules_soft", "--full-refresh")
    result.rebuilt_soft_deleted = rows(spark, SOFT_DELETED_ROWS)
    yield result
    drop_tables(spark, *TABLES)


def test_the_first_run_builds_the_mirror_from_the_snapshot(scenario):
    assert scenario.after["hard@1"] == [
        (1, "one", "r"), (2, "two", "r"), (3, "three", "r"), (5, "five", "r"), (7, "seven", "r"), (12, "twelve", "r")]
    assert scenario.after["soft@1"] == scenario.after["hard@1"]


def test_changes_apply_in_offset_order_last_per_key(scenario):
    assert scenario.after["hard@2"] == [
        (1, "one-b", "u"), (3, "three-again", "c"), (4, "four-b", "u"), (7, "seven", "r"), (8, "eight", "c")]


def test_soft_mode_keeps_deleted_rows_flagged_with_the_delete_time(scenario):
    assert scenario.after["soft@2"] == scenario.after["hard@2"]
    assert scenario.after["soft-deleted@2"] == [
        (2, "two", "2023-11-14 22:13:20"), (5, "five", "1970-01-01 00:00:00.4"),
        (11, "eleven-b", "1970-01-01 00:00:00.34"), (12, "twelve-b", "1970-01-01 00:00:00.31")]


def test_a_soft_deleted_row_keeps_the_same_values_when_rebuilt(spark, scenario):
    # A rebuild reads the whole history at once: its deletes carry their keys' last values too.
    assert scenario.rebuilt_soft_deleted == scenario.after["soft-deleted@3"]


def test_resnapshot_reads_never_resurrect_deleted_rows_with_older_data(scenario):
    # Keys 2 and 5 were deleted (hard: gone; soft: flagged) after the stale reads were taken.
    expected = [(1, "one-b", "u"), (3, "three-again", "c"), (4, "four-b", "u"), (7, "seven", "r"),
                (8, "eight", "c"), (9, "nine", "r"), (10, "ten", "c")]
    assert scenario.after["hard@3"] == expected
    assert scenario.after["soft@3"] == expected
    assert [r[0] for r in scenario.after["soft-deleted@3"]] == [2, 5, 11, 12]


@pytest.mark.parametrize("run", [2, 3])
def test_the_view_shows_ingested_changes_before_they_are_folded_and_a_fold_changes_no_visible_row(scenario, run):
    # Batch 2: updates, hard and soft deletes (an update and its delete in one batch), a new value field
    # the view does not show until folded; batch 3: stale re-snapshot reads of keys deleted before the cursor.
    for what in ("hard", "soft", "soft-deleted"):
        assert scenario.after[f"{what}@{run}-unfolded"] == scenario.after[f"{what}@{run}"], what


def test_new_value_fields_evolve_the_mirror(spark, scenario):
    assert rows(spark, "select ID, email from zync.mir_rules_hard where ID in (1, 8) order by ID") == [
        (1, None), (8, "eight@example.com")]


def test_time_travel_shows_the_row_before_the_update(spark, scenario):
    assert rows(spark, "select name from zync.mir_rules_hard where ID = 1") == [("one-b",)]
    assert rows(spark, f"select name from zync.mir_rules_hard__base version as of {scenario.first_version} where ID = 1") == [("one",)]
    assert rows(spark, f"select name from zync.mir_rules_hard__base timestamp as of '{scenario.first_commit_time}' where ID = 1") == [("one",)]


def test_each_run_is_one_merge_commit(spark, scenario):
    operations = [r[0] for r in spark.sql("describe history zync.mir_rules_hard__base").orderBy("version").select("operation").collect()]
    assert operations[-2:] == ["MERGE", "MERGE"]


def _raw_cursor(*batches: list) -> dict[str, int]:
    """The largest raw offset per partition in the batches, keyed as the commit metadata keys it."""
    cursor: dict[str, int] = {}
    for kafka, _, _ in itertools.chain(*batches):
        _, partition, offset, *_ = kafka
        cursor[str(partition)] = max(offset, cursor.get(str(partition), -1))
    return cursor


def _stored_cursors(spark, table: str) -> list[dict]:
    history = spark.sql(f"describe history zync.{table}").orderBy("version").collect()
    return [json.loads(r.userMetadata) for r in history if r.userMetadata]


def test_each_commit_carries_the_cursor_past_what_it_applied(spark, scenario):
    # The build: the raw offsets read before it; each MERGE: the cursor it read, moved past its changes
    # (run 2's tombstone and its offset below the cursor are not changes; run 3 opens partition 1).
    assert _stored_cursors(spark, "mir_rules_hard__base")[:3] == [
        {"zync_mirror": "zync.mir_rules_hard", "cursor": _raw_cursor(BATCH_1)},
        {"zync_mirror": "zync.mir_rules_hard", "cursor": _raw_cursor(BATCH_1, BATCH_2)},
        {"zync_mirror": "zync.mir_rules_hard", "cursor": _raw_cursor(BATCH_1, BATCH_2, BATCH_3)},
    ]


def test_a_restored_mirror_resumes_from_the_cursor_of_the_version_it_went_back_to(spark, scenario, tmp_path):
    merges = spark.sql("describe history zync.mir_rules_hard__base").where("operation = 'MERGE'").orderBy("version").collect()
    spark.sql(f"restore table zync.mir_rules_hard__base to version as of {merges[0].version}")  # back to after run 2
    assert rows(spark, LIVE_ROWS.format("mir_rules_hard", "true")) == scenario.after["hard@2"]
    scenario.project.dbt("run", "--select", "mir_rules_hard", "--log-path", str(tmp_path), "--log-level-file", "debug")
    # Batch 3 applied again from run 2's cursor, found in the log past the RESTORE: the mirror was not scanned.
    assert rows(spark, LIVE_ROWS.format("mir_rules_hard", "true")) == scenario.after["hard@3"]
    assert _stored_cursors(spark, "mir_rules_hard__base")[-1]["cursor"] == _raw_cursor(BATCH_1, BATCH_2, BATCH_3)
    log = (tmp_path / "dbt.log").read_text()
    assert "describe history" in log
    assert "max(`_zync_kafka`.`offset`) from zync.mir_rules_hard__base " not in log


def test_a_default_mirrors_run_reads_the_raw_tables_key_and_source_time_from_one_describe(spark, scenario, tmp_path):
    before = rows(spark, LIVE_ROWS.format("mir_rules_hard", "true"))
    scenario.project.dbt("run", "--select", "mir_rules_hard", "--log-path", str(tmp_path), "--log-level-file", "debug")
    assert rows(spark, LIVE_ROWS.format("mir_rules_hard", "true")) == before
    log = (tmp_path / "dbt.log").read_text()
    # The select's render described the raw table once and read the key's names and the source time from
    # its types; the materialization took the names it left (then cleared them).
    assert log.count(f"describe extended zync.{RAW}") == 1, re.findall(r"describe extended \S+", log)
    for asked in ("`key`.*", "`value`.*", "`value`.`source`.*"):
        assert f"select {asked} from zync.{RAW}" not in log
    assert "set zync.note.mirror_key_names." in log and "reset zync.note.mirror_key_names." in log
    # Its value columns are value.after's fields: only that struct is described, not the rows' columns.
    assert "describe query select `_zync_after`.* from zync.mir_rules_hard__raw_changes" in log
    assert "describe query select * from zync.mir_rules_hard__raw_changes" not in log


def test_the_dbt_tests_pass_then_catch_a_broken_mirror(spark, scenario):
    scenario.project.dbt("test", "--select", "mir_rules_hard", "mir_rules_soft")
    # Break the hard mirror behind dbt's back: a duplicate key and a deleted key brought back.
    spark.sql("insert into zync.mir_rules_hard__base select * from zync.mir_rules_hard__base where ID = 1")
    spark.sql("insert into zync.mir_rules_hard__base (ID, name, _zync_op) values (2, 'ghost', 'c')")
    result = scenario.project.dbt("test", "--select", "mir_rules_hard", expect_success=False)
    failed = sorted(r.node.name.split("_mir_rules_hard")[0] for r in result.results if r.status == "fail")
    assert failed == ["zync_mirror_matches_raw", "zync_mirror_no_deleted_keys", "zync_mirror_primary_key"]
