"""`zync run` keeps a history model current: a pattern entry with `history: true` over a Debezium-shaped
topic, the history built at the first cycles and extended as changes arrive, an idle cycle writing nothing.
The expected versions are made from the events alone (tests/mirrors/test_history.py: expected_versions)."""

from __future__ import annotations

import io
import json

from service.run import Service
from testkit import debezium
from testkit.invoices import ROOT
from testkit.scratch import drop_relation, make_scratch_project
from tests.mirrors.test_history import KEY_FIELDS, ROW_FIELDS, expected_versions
from zync import kafka_client, topics
from zync.progress import Progress

SERVER, SCHEMA_NAME, TABLE = "histrun", "public", "people"
TOPIC = debezium.topic(SERVER, SCHEMA_NAME, TABLE)
MIRRORS = r"""
mirrors:
  - topics: 'histrun\.public\..*'
    name: '{table}_hr'
    history: true
"""
MIRROR, HISTORY, RAW = "zync.people_hr", "zync.people_hr_history", "zync.raw_histrun_public_people"


def change(op: str, ident: int, lsn: int, name: str | None = None, before: str | None = None) -> dict:
    after = None if op == "d" else {"id": ident, "name": name, "email": None}
    prior = None if before is None else {"id": ident, "name": before, "email": None}
    source = debezium.source(SERVER, "shop", SCHEMA_NAME, TABLE, lsn * 10, lsn=lsn, snapshot=op == "r")
    return {"key": {"id": ident}, "value": debezium.event(op, after, prior, source, lsn * 10 + 1)}


def produce(target, folder, records: list[dict]) -> None:
    key, value = folder / "key.avsc", folder / "value.avsc"
    key.write_text(json.dumps(debezium.key_schema(SERVER, SCHEMA_NAME, TABLE, KEY_FIELDS)))
    value.write_text(json.dumps(debezium.value_schema(SERVER, SCHEMA_NAME, TABLE, ROW_FIELDS)))
    topics.produce(target, TOPIC, records, key, value)


def versions(spark) -> list[tuple]:
    return [tuple(r) for r in spark.sql(f"""
        select id, name, email, unix_millis(valid_from), unix_millis(valid_to), is_current, _zync_op,
            _zync_transaction
        from {HISTORY} order by id, _zync_position, _zync_kafka.offset""").collect()]


def cycles_until(service: Service, done, most: int = 6) -> None:
    for _ in range(most):
        service.cycle()
        if done():
            return
    raise AssertionError(f"not done after {most} cycles")


def test_zync_run_keeps_a_history_model_current(target, spark, tmp_path):
    assert not kafka_client.topic_exists(target, TOPIC), f"{TOPIC} exists before the test ran"
    first = [change("r", 1, 100, "ann"), change("r", 2, 100, "bob"), change("u", 1, 200, "anna", before="ann")]
    later = [change("d", 2, 300, before="bob"), change("c", 3, 400, "cy")]
    produce(target, tmp_path, first)
    project = make_scratch_project(tmp_path / "project", {"db.yml": MIRRORS}, spark=spark,
                                   topics=lambda: kafka_client.topic_names(target))
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    try:
        with Service(target, root=project.path, status=Progress.for_run(stream=io.StringIO(), live=False)) as service:
            cycles_until(service, lambda: spark.catalog.tableExists(HISTORY) and len(versions(spark)) == 3)
            assert {m.name: m.kind for m in service.models} == {"people_hr": "mirror", "people_hr_history": "history"}
            assert versions(spark) == expected_versions(first, new_record=False)

            produce(target, tmp_path, later)
            cycles_until(service, lambda: len(versions(spark)) == 4)
            assert versions(spark) == expected_versions(first + later, new_record=False)
            assert [r[0] for r in spark.sql(f"select id from {MIRROR} order by 1").collect()] == [1, 3]

            # A cycle with nothing new writes no version of the history.
            before = spark.sql(f"describe history {HISTORY}").count()
            service.cycle()
            assert spark.sql(f"describe history {HISTORY}").count() == before
    finally:
        for name in (HISTORY, f"{HISTORY}__raw_changes", MIRROR, f"{MIRROR}__raw_changes", RAW):
            drop_relation(spark, name)
