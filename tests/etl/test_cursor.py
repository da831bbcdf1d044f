"""The cursor: each run reads inputs and done rows only from the cursor on; runs are idempotent
(two runs at once: tests/etl/test_runs_at_once.py)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.etl.scratch import SCHEMA, append_raw, drop_tables, raw_row

OUT = "etlc_cur_out"
RAW = "etlc_cur_a"

TRANSFORM = f"""\
inputs:
  - {{topic: etlcCurA, table: {RAW}}}
output: {{topic: etlcCurOut, model: {OUT}}}
transforms:
  - type: stateless
    where: value.op = 'c'
    in: etlcCurA
    out: etlcCurOut
    key: in.key
    value: {{id: in.value.after.id, name: in.value.after.name}}
"""


def A(offset):
    return raw_row("etlcCurA", offset, offset % 7, "c", id=offset, name=f"n{offset}")


@pytest.fixture
def etl(project, spark):
    drop_tables(spark, RAW, OUT, f"{OUT}__pending")
    yield project({"cursor.yml": TRANSFORM})
    drop_tables(spark, RAW, OUT, f"{OUT}__pending")


def files_of(spark, table: str, where: str) -> set[Path]:
    rows = spark.sql(f"select distinct input_file_name() from {SCHEMA}.{table} where {where}").collect()
    return {Path(urlparse(r[0]).path) for r in rows}


def test_a_run_after_a_long_history_reads_only_files_past_the_cursor(etl, spark):
    for commit in range(5):  # a history of five ingest commits, one file each
        append_raw(spark, RAW, [A(commit * 4 + n) for n in range(4)])
    # The look-back for Debezium's replays reads the raw table from its window below the cursor
    # (macros/etl/pending/zync_replays.sql): 4 offsets here, one file of the history.
    window = ["--vars", "{zync_replay_window: 4}"]
    etl.dbt("run", "--select", OUT, *window)
    history = files_of(spark, RAW, "true")
    assert len(history) == 5
    look_back = files_of(spark, RAW, "kafka.offset >= 16")
    assert len(look_back) == 1
    written = files_of(spark, OUT, "kind in ('out', 'done')")
    assert written and all(p.parent.name in ("kind=out", "kind=done") for p in written)
    # Every input record below the cursor (offset 20) is done: take the raw
    # files below the look-back away, and the output table's out and done
    # files too (only its cursor rows stay). A run that opened any of them
    # would fail.
    for path in (history - look_back) | written:
        path.unlink()
    with pytest.raises(Exception, match="(?i)file.*(not exist|not found)|FileNotFound"):
        # (count(*) alone is answered from Delta's statistics, without the files)
        spark.sql(f"select max(value.after.name) from {SCHEMA}.{RAW}").collect()

    append_raw(spark, RAW, [A(20), A(21)])
    etl.dbt("run", "--select", OUT, *window)
    new = etl.rows(OUT, "kind = 'out' and kafka.offset >= 20")
    assert sorted((r.kafka.offset, r.value.id) for r in new) == [(20, 20), (21, 21)]
    done = etl.rows(OUT, "kind = 'done' and kafka.offset >= 20")
    assert sorted(r.kafka.offset for r in done) == [20, 21]
    cursor = spark.sql(
        f"select max(kafka.offset) from {SCHEMA}.{OUT} where kind = 'cursor' and kafka.topic = 'etlcCurA'"
    ).collect()[0][0]
    assert cursor == 22


def counts(spark) -> dict[str, int]:
    rows = spark.sql(f"select kind, count(*) from {SCHEMA}.{OUT} group by kind").collect()
    return {r[0]: r[1] for r in rows}


def test_a_run_with_nothing_new_adds_nothing(etl, spark):
    append_raw(spark, RAW, [A(n) for n in range(3)])
    etl.run(OUT)
    before = counts(spark)
    assert before == {"out": 3, "done": 3, "cursor": 2}
    version = spark.sql(f"describe history {SCHEMA}.{OUT} limit 1").first()["version"]
    etl.run(OUT)
    assert counts(spark) == before
    # Nothing pending: no MERGE, so no new version of the table.
    assert spark.sql(f"describe history {SCHEMA}.{OUT} limit 1").first()["version"] == version
