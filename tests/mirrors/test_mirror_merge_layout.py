"""How a mirror's MERGE finds its rows, on real Spark/Delta and dbt: deletion vectors and the key filter.

A mirror keyed by (ID, name), names holding quotes and backslashes, built,
then turned into one "made before deletion vectors" (the property set to
false), then one incremental run: the run sets the property again, writes
deletion vectors, names every changed key in its MERGE (the key filter,
macros/mirror/merge/zync_mirror_merge_sql.sql), and leaves what a rebuild leaves;
time travel to the build still shows the rows before the changes.
The mirror is also turned into one stored as a table under its own name (as
mirrors were before they had a base table): the run renames it to its base,
keeping its history and the cursor its commits carry, and makes the view.
That run lists the schema's relations as `zync run`'s runs do, by name and
kind only, which must give what dbt-spark's full listing gives.
"""

from __future__ import annotations

import json

import pytest

from service.project import relation_names_only
from tests.mirrors.conftest import append_raw, change, drop_tables, mirror_project, rows

TOPIC = "mir_Layout"
RAW = "mir_raw_layout"
MIRRORS = f"""\
mirrors:
  - model: mir_layout
    topic: {TOPIC}
    table: {RAW}
    primary-key:
      ID: key.ID
      name: coalesce(value.after.name, value.before.name)
    columns: {{note: value.after.note}}
"""
TABLES = (RAW, "mir_layout")
NAMES = {1: "plain", 2: "o'brien", 3: "back\\slash", 4: "both\\'", 5: "five", 6: "six", 7: "new'one\\"}


def keyed(offset: int, op: str, key: int, note: str | None = None):
    """A raw change whose before image (updates, deletes) carries the name, part of the primary key."""
    kafka, kafka_key, (before, after, op_, ts) = change(TOPIC, offset, op, key, None if op == "d" else NAMES[key],
                                                       note=note)
    return (kafka, kafka_key, (before and (key, NAMES[key], None), after, op_, ts))


SNAPSHOT = [keyed(i - 1, "r", i, f"note-{i}") for i in range(1, 7)]
CHANGES = [
    keyed(6, "u", 1, "note-1b"),
    keyed(7, "u", 2, "note-2b"),
    keyed(8, "u", 3, "note-3b"),
    keyed(9, "d", 4),
]
LIVE = "select ID, name, note from zync.mir_layout{} order by ID"


@pytest.fixture(scope="module")
def layout(spark, tmp_path_factory):
    drop_tables(spark, *TABLES)
    folder = tmp_path_factory.mktemp("mir_layout")
    project = mirror_project(folder / "project", {"mirrors.yml": MIRRORS}, spark)
    append_raw(spark, RAW, SNAPSHOT, ("note",))
    project.dbt("run", "--select", "mir_layout")
    built = spark.sql("describe history zync.mir_layout__base").agg({"version": "max"}).first()[0]
    # A mirror made before zync set deletion vectors on mirrors, and before mirrors had a base table.
    spark.sql("alter table zync.mir_layout__base set tblproperties ('delta.enableDeletionVectors' = 'false')")
    spark.sql("drop view zync.mir_layout")
    spark.sql("alter table zync.mir_layout__base rename to zync.mir_layout")
    append_raw(spark, RAW, [*CHANGES, keyed(10, "c", 7, "note-7")], ("note",))
    logs = folder / "logs"
    with relation_names_only():  # as `zync run` runs it: dbt's relation cache from names and kinds only
        project.dbt("run", "--select", "mir_layout", "--log-path", str(logs), "--log-level-file", "debug")
    yield {"project": project, "built": built, "log": (logs / "dbt.log").read_text()}
    drop_tables(spark, *TABLES)


def test_an_existing_mirror_gets_deletion_vectors_and_its_merge_writes_them(spark, layout):
    properties = dict(rows(spark, "show tblproperties zync.mir_layout__base"))
    assert properties["delta.enableDeletionVectors"] == "true"
    merge = spark.sql("describe history zync.mir_layout__base").orderBy("version", ascending=False).first()
    assert merge["operation"] == "MERGE"
    metrics = merge["operationMetrics"]
    assert int(metrics["numTargetDeletionVectorsAdded"]) >= 1, metrics
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"], metrics["numTargetRowsInserted"]) == ("3", "1", "1")
    assert json.loads(merge["userMetadata"])["cursor"] == {"0": 10}


def test_the_merge_names_every_changed_key_quoted_as_spark_reads_it(layout):
    log = layout["log"]
    merge = log[log.index("merge into zync.mir_layout__base"):]
    filter_line = next(line for line in merge.splitlines() if "(mirror.`ID`, mirror.`name`) in (" in line)
    for key in (1, 2, 3, 4, 7):
        name = NAMES[key].replace("\\", "\\\\").replace("'", "\\'")
        assert f"({key}, '{name}')" in filter_line
    assert "(5, 'five')" not in filter_line


def test_the_merged_mirror_is_what_a_rebuild_gives(spark, layout):
    assert rows(spark, LIVE.format("")) == [
        (1, "plain", "note-1b"), (2, "o'brien", "note-2b"), (3, "back\\slash", "note-3b"),
        (5, "five", "note-5"), (6, "six", "note-6"), (7, "new'one\\", "note-7"),
    ]
    layout["project"].dbt("test", "--select", "mir_layout")  # zync_mirror_matches_raw: equal to a rebuild


def test_a_mirror_stored_as_a_table_becomes_the_base_of_its_view_keeping_history_and_cursor(spark, layout):
    assert spark.catalog.getTable("zync.mir_layout").tableType == "VIEW"
    history = spark.sql("describe history zync.mir_layout__base").orderBy("version").collect()
    assert history[layout["built"]]["operation"].endswith("TABLE AS SELECT")  # the build, before the rename
    # The cursor came from the renamed table's log, not from a scan of its rows.
    assert "max(`_zync_kafka`.`offset`) from zync.mir_layout" not in layout["log"]


def test_time_travel_reads_the_build_under_the_deletion_vectors(spark, layout):
    assert rows(spark, LIVE.format(f"__base version as of {layout['built']}")) == [
        (i, NAMES[i], f"note-{i}") for i in range(1, 7)
    ]


LISTED = """{%- for row in spark__list_relations_without_caching(api.Relation.create(schema='zync')) -%}
{{ row[1] }} {{ 'view' if 'Type: VIEW' in row[3] else 'table' }}
{% endfor -%}"""


def listed(project) -> set[tuple[str, str]]:
    run = project.dbt("compile", "--inline", LISTED, "--no-populate-cache")
    return {tuple(line.split()) for line in run.results[0].node.compiled_code.splitlines() if line.strip()}


def test_relations_listed_by_name_and_kind_are_those_dbt_spark_lists_with_the_same_kinds(layout):
    assert "show views in zync" in layout["log"] and "show table extended" not in layout["log"]
    full = listed(layout["project"])
    with relation_names_only():
        by_name = listed(layout["project"])
    assert {("mir_layout", "view"), ("mir_layout__base", "table"), ("mir_layout__raw_changes", "view"),
            (RAW, "table")} <= full
    assert by_name == full
