"""Two runs of the same models at once, in the worst order: one reads, the other (another
process, as an analyst's `dbt run` beside `zync run`) commits, then the first writes.

- An output model: the first run's rows are the records the other already wrote; its
  MERGE must stop it ("already wrote"), not write them a second time. (A first version
  bounded that check by the cursors read at MERGE time, which the other run had moved
  past its own done rows: the records were written twice.)
- A mirror: the first run's changes may be older than the other's; its fold must write
  nothing to the mirror's base ("committed since this run read its changes"), or it
  could overwrite newer values for good. (The mirror's name is a view that shows every
  change at once; the base is what a fold writes and what the hold waits on.)
Two processes at once are tried unordered in tests/service/test_run_service.py.
"""

from __future__ import annotations

from zync.tables import MIRROR_BASE_SUFFIX
from tests.etl.scratch import SCHEMA, drop_tables
from testkit.scratch import make_scratch_project
from tests.held_run import HeldRun, add_hold_hook, other_dbt_run
from tests.mirrors.conftest import append_raw, change, rows

TOPIC = "etlcAtOnce"
RAW = "etlc_at_once_raw"
OUT = "etlc_at_once_out"
MIRROR = "etlc_at_once_mirror"
TRANSFORM = f"""\
inputs:
  - {{topic: {TOPIC}, table: {RAW}}}
output: {{topic: etlcAtOnceOut, model: {OUT}}}
transforms:
  - type: stateless
    where: value.op in ('c', 'u')
    in: {TOPIC}
    out: etlcAtOnceOut
    key: in.key
    value: {{id: in.value.after.ID, name: in.value.after.name}}
"""
MIRRORS = f"""\
mirrors:
  - model: {MIRROR}
    topic: {TOPIC}
    table: {RAW}
"""


BASE = f"{MIRROR}{MIRROR_BASE_SUFFIX}"


def test_a_run_that_read_before_another_committed_writes_nothing(spark, tmp_path):
    spark.sql(f"create schema if not exists {SCHEMA}")
    drop_tables(spark, RAW, OUT, MIRROR, BASE, f"{OUT}__pending")
    project = make_scratch_project(tmp_path / "project", {"out.yml": TRANSFORM, "mirrors.yml": MIRRORS}, spark=spark)
    append_raw(spark, RAW, [change(TOPIC, 0, "c", 1, "one"), change(TOPIC, 1, "c", 2, "two")])
    project.dbt("run", "--select", OUT, MIRROR)
    mirror_versions = spark.sql(f"describe history {SCHEMA}.{BASE}").count()

    append_raw(spark, RAW, [change(TOPIC, 2, "u", 1, "one-a")])
    add_hold_hook(project.path)
    held = HeldRun(project.dbt, {
        OUT: (f"select count(*) from {SCHEMA}.{OUT} where kind = 'done'", 3),
        MIRROR: (f"select count(*) from {SCHEMA}.{BASE} where name = 'one-b'", 1),
    })
    held.wait_until_held(spark)  # both models rendered: their cursors are read
    append_raw(spark, RAW, [change(TOPIC, 3, "u", 1, "one-b")])
    other_dbt_run(project.path, OUT, MIRROR)  # writes offsets 2-3

    messages = held.messages()
    assert "already wrote" in messages[OUT], messages
    assert "committed since this run read its changes" in messages[MIRROR], messages
    outs = sorted((r.kafka.offset, r.value.name) for r in project.rows(OUT, "kind = 'out'"))
    assert outs == [(0, "one"), (1, "two"), (2, "one-a"), (3, "one-b")]
    assert sorted(r.kafka.offset for r in project.rows(OUT, "kind = 'done'")) == [0, 1, 2, 3]
    assert rows(spark, f"select ID, name from {SCHEMA}.{MIRROR} order by ID") == [(1, "one-b"), (2, "two")]
    assert spark.sql(f"describe history {SCHEMA}.{BASE}").count() == mirror_versions + 1  # the other run's only
    drop_tables(spark, RAW, OUT, MIRROR, BASE, f"{OUT}__pending")
