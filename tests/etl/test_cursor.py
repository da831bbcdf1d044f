"""The cursor: each run reads inputs and done rows only from the cursor on; runs are idempotent
and a run that read what another committed meanwhile writes nothing."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from tests.etl.scratch import ROOT, SCHEMA, append_raw, drop_tables, raw_row

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
    etl.run(OUT)
    history = files_of(spark, RAW, "true")
    assert len(history) == 5
    written = files_of(spark, OUT, "kind in ('out', 'done')")
    assert written and all(p.parent.name in ("kind=out", "kind=done") for p in written)
    # Every input record below the cursor (offset 20) is done: take the raw
    # files away, and the output table's out and done files too (only its
    # cursor rows stay). A run that opened any of them would fail.
    for path in history | written:
        path.unlink()
    with pytest.raises(Exception, match="(?i)file.*(not exist|not found)|FileNotFound"):
        # (count(*) alone is answered from Delta's statistics, without the files)
        spark.sql(f"select max(value.after.name) from {SCHEMA}.{RAW}").collect()

    append_raw(spark, RAW, [A(20), A(21)])
    etl.run(OUT)
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
    etl.run(OUT)
    assert counts(spark) == before


HOLD_HOOK = """\
{#
  A pre-hook (dbt renders a model's rows before its pre-hooks): with var
  hold_until_done_rows, holds the run before its MERGE until the output table
  has that many done rows, i.e. until another run has committed.
#}
{% macro hold_until_done_rows() -%}
  {%- set wanted = var('hold_until_done_rows', 0) -%}
  {%- set waiting = {'on': execute and wanted > 0} -%}
  {%- for attempt in range(480) if waiting.on -%}
    {%- if run_query("select count(*) from " ~ this ~ " where kind = 'done'").rows[0][0] >= wanted -%}
      {%- do waiting.update({'on': false}) -%}
    {%- else -%}
      {%- do run_query("select reflect('java.lang.Thread', 'sleep', cast(500 as bigint))") -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro %}
"""


def add_hold_hook(project: Path) -> None:
    (project / "test_macros").mkdir()
    (project / "test_macros" / "hold_until_done_rows.sql").write_text(HOLD_HOOK)
    config = yaml.safe_load((project / "dbt_project.yml").read_text())
    config["macro-paths"].append("test_macros")
    config["models"]["zync"]["outputs"]["+pre-hook"] = "{{ hold_until_done_rows() }}"
    (project / "dbt_project.yml").write_text(yaml.safe_dump(config))


def cache_views(spark) -> set[str]:
    return {r.viewName for r in spark.sql(f"show views like 'zync_cache__{OUT}__*'").collect()}


def test_a_run_that_read_before_another_committed_writes_nothing(etl, spark):
    """Two runs that read the same pending records, the second committing between
    the first's read and its MERGE (what a hand-run `dbt run` beside `zync run`
    can do): the first must be stopped, not write those records again."""
    append_raw(spark, RAW, [A(n) for n in range(3)])
    etl.run(OUT)
    append_raw(spark, RAW, [A(n) for n in range(3, 6)])
    add_hold_hook(etl.path)
    views_before = cache_views(spark)
    held = []
    first = threading.Thread(target=lambda: held.append(
        etl.dbt("run", "--select", OUT, "--vars", "{hold_until_done_rows: 6}", expect_success=False)))
    first.start()
    # The held run has read its pending records once it cached them (in this process's session).
    deadline = time.monotonic() + 120
    while cache_views(spark) <= views_before and first.is_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first.is_alive(), f"the held run ended before it was held: {held}"
    # Another process runs the model to the end meanwhile: it writes offsets 3-5.
    other = subprocess.run(
        [str(Path(sys.executable).parent / "dbt"), "run", "--select", OUT,
         "--project-dir", str(etl.path), "--profiles-dir", str(ROOT / "profiles")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert other.returncode == 0, other.stdout[-3000:]
    first.join(timeout=300)
    assert not first.is_alive()
    result = held[0]
    message = str(result.exception) if result.exception else " | ".join(str(n.message) for n in result.result.results)
    assert not result.success and "already wrote" in message, message
    outs = sorted(r.kafka.offset for r in etl.rows(OUT, "kind = 'out'"))
    assert outs == list(range(6))
    done = sorted(r.kafka.offset for r in etl.rows(OUT, "kind = 'done'"))
    assert done == list(range(6))
