"""History models (`history: true`): Debezium events -> Kafka -> zync from-kafka -> dbt run -> one row per
version of each key, on the real broker, registry, Spark/Delta and dbt.

The expected versions are made here from the events alone (expected_versions: a key's events in source
order, each version valid until its key's next event), not from what the model wrote.
"""

from __future__ import annotations

import json

import pytest

from ingest.from_kafka import Ingest
from testkit import debezium
from tests.mirrors.conftest import drop_tables, mirror_project, rows
from zync import kafka_client, topics

SERVER, SCHEMA_NAME, TABLE = "hist", "public", "people"
TOPIC = debezium.topic(SERVER, SCHEMA_NAME, TABLE)
RAW = "hist_raw_people"
MIRROR = "hist_people"  # default columns, hard_deletes: invalidate (the default)
NR_MIRROR = "hist_people_nr"  # its own columns, soft deletes, hard_deletes: new_record
HISTORY, NR_HISTORY = f"{MIRROR}_history", f"{NR_MIRROR}_history"
MODELS = (MIRROR, HISTORY, NR_MIRROR, NR_HISTORY)
MIRRORS = f"""\
mirrors:
  - model: {MIRROR}
    topic: {TOPIC}
    table: {RAW}
    history: true
  - model: {NR_MIRROR}
    topic: {TOPIC}
    table: {RAW}
    delete: soft
    primary-key: [id]
    columns:
      name: value.after.name
      email: value.after.email
    history: true
    hard_deletes: new_record
"""
KEY_FIELDS = [{"name": "id", "type": "int"}]
ROW_FIELDS = [{"name": "id", "type": "int"},
              {"name": "name", "type": ["null", "string"], "default": None},
              {"name": "email", "type": ["null", "string"], "default": None}]


def change(op: str, ident: int, lsn: int, ts: int, name: str | None = None, email: str | None = None,
           before: tuple | None = None, txid: str | None = None) -> dict:
    """One Debezium event of table people; `before`: (name, email) of the row before it (deletes, updates)."""
    after = None if op == "d" else {"id": ident, "name": name, "email": email}
    prior = None if before is None else {"id": ident, "name": before[0], "email": before[1]}
    block = debezium.transaction_block(txid, 1, 1) if txid else None
    value = debezium.event(op, after, prior, debezium.source(SERVER, "shop", SCHEMA_NAME, TABLE, ts, lsn=lsn,
                                                             snapshot=op == "r"), ts + 5, transaction=block)
    return {"key": {"id": ident}, "value": value}


def tombstone(ident: int) -> dict:
    return {"key": {"id": ident}, "value": None}


# Each batch is produced and ingested, then the models run. Source positions (LSN) and times grow together;
# the event at LSN 700 arrives after the one at 800 (late), and batch 3 sends batch 2 again (Debezium after a
# connector restart: the same changes at new offsets) with a late update of key 2 from before its delete.
BATCH_1 = [
    change("r", 1, 100, 1000, "Ann", "ann@x"),
    change("r", 2, 100, 1000, "Bob", "bob@x"),
    change("u", 1, 200, 2000, "Ann", None, before=("Ann", "ann@x"), txid="501:200"),  # email updated to NULL
    change("c", 3, 300, 3000, "Cy", "cy@x", txid="502:300"),
    change("d", 2, 400, 4000, before=("Bob", "bob@x"), txid="503:400"),
    tombstone(2),
]
BATCH_2 = [
    change("u", 1, 500, 5000, "Ann", "ann@y", before=("Ann", None)),  # and back from NULL
    change("c", 2, 600, 6000, "Bob", "bob@new"),  # created again
    change("u", 3, 800, 8000, "Cy", "cy@late-not"),
    change("u", 3, 700, 7000, "Cy", "cy@between"),  # late by source position
]
BATCH_3 = [*BATCH_2, change("u", 2, 350, 3500, "Bobby", "bob@x")]  # a replay, and a change before key 2's delete


def expected_versions(events: list[dict], new_record: bool) -> list[tuple]:
    """(id, name, email, valid_from ms, valid_to ms, is_current, op, transaction) per version, by key and
    source position: from the events alone. A Kafka record's events: its key's changes in LSN order (a
    change sent again, same key, LSN and op, counts once); a version per c/r/u (and d with new_record,
    the row as deleted), valid until the key's next change; current if last and not a delete."""
    seen, by_key = set(), {}
    for e in events:
        v = e["value"]
        if v is None:
            continue
        ident = e["key"]["id"]
        marker = (ident, v["source"]["lsn"], v["op"])
        if marker in seen:
            continue
        seen.add(marker)
        by_key.setdefault(ident, []).append(v)
    out = []
    for ident in sorted(by_key):
        changes = sorted(by_key[ident], key=lambda v: v["source"]["lsn"])
        for n, v in enumerate(changes):
            if v["op"] == "d" and not new_record:
                continue
            following = changes[n + 1] if n + 1 < len(changes) else None
            image = v["before"] if v["op"] == "d" else v["after"]
            out.append((ident, image["name"], image["email"], v["source"]["ts_ms"],
                        following["source"]["ts_ms"] if following else None,
                        following is None and v["op"] != "d", v["op"],
                        v["transaction"]["id"] if v.get("transaction") else None))
    return out


def versions(spark, model: str) -> list[tuple]:
    return rows(spark, f"""
        select id, name, email, unix_millis(valid_from), unix_millis(valid_to), is_current, _zync_op,
            _zync_transaction
        from zync.{model} order by id, _zync_position, _zync_kafka.partition, _zync_kafka.offset""")


def produce_and_ingest(target, schemas, records: list[dict]) -> None:
    topics.produce(target, TOPIC, records, *schemas)
    landed = 0
    for _ in range(5):
        landed += Ingest(target, [TOPIC], table=RAW).run(exit_after=0.0)
        if landed >= len(records):
            break
    assert landed == len(records)


@pytest.fixture(scope="module")
def schemas(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hist_schemas")
    key, value = folder / "key.avsc", folder / "value.avsc"
    key.write_text(json.dumps(debezium.key_schema(SERVER, SCHEMA_NAME, TABLE, KEY_FIELDS)))
    value.write_text(json.dumps(debezium.value_schema(SERVER, SCHEMA_NAME, TABLE, ROW_FIELDS, transaction=True)))
    return key, value


@pytest.fixture(scope="module")
def project(target, spark, tmp_path_factory):
    assert not kafka_client.topic_exists(target, TOPIC), f"{TOPIC} exists before the test ran"
    drop_tables(spark, RAW, *MODELS)
    yield mirror_project(tmp_path_factory.mktemp("hist") / "project", {"mirrors.yml": MIRRORS}, spark)
    drop_tables(spark, RAW, *MODELS)


def run_all(project) -> None:
    project.dbt("run", "--select", *MODELS)


def test_history_keeps_every_version_and_repairs_late_changes(target, spark, schemas, project):
    produce_and_ingest(target, schemas, BATCH_1)
    run_all(project)
    assert versions(spark, HISTORY) == expected_versions(BATCH_1, new_record=False)
    assert versions(spark, NR_HISTORY) == expected_versions(BATCH_1, new_record=True)
    # Spelled out for key 2 (a snapshot read, then deleted): invalidate closes it, new_record adds a version.
    assert [v[:7] for v in versions(spark, HISTORY) if v[0] == 2] == [(2, "Bob", "bob@x", 1000, 4000, False, "r")]
    assert [v[:7] for v in versions(spark, NR_HISTORY) if v[0] == 2] == [
        (2, "Bob", "bob@x", 1000, 4000, False, "r"), (2, "Bob", "bob@x", 4000, None, False, "d")]
    project.dbt("test", "--select", HISTORY, NR_HISTORY)  # changes in source order: history and mirror agree
    # One history as if made before history models had deletion vectors.
    assert dict(rows(spark, f"show tblproperties zync.{NR_HISTORY}"))["delta.enableDeletionVectors"] == "true"
    spark.sql(f"alter table zync.{HISTORY} set tblproperties ('delta.enableDeletionVectors' = 'false')")

    produce_and_ingest(target, schemas, BATCH_2)
    run_all(project)
    # The run set the property again, and its MERGE marked the repaired versions' rows in their files (deletion
    # vectors) rather than rewriting the files: what keeps a run's cost its changes', not the history's.
    assert dict(rows(spark, f"show tblproperties zync.{HISTORY}"))["delta.enableDeletionVectors"] == "true"
    merge = spark.sql(f"describe history zync.{HISTORY}").orderBy("version", ascending=False).first()
    assert merge["operation"] == "MERGE" and int(merge["operationMetrics"]["numTargetDeletionVectorsAdded"]) > 0, merge
    assert versions(spark, HISTORY) == expected_versions(BATCH_1 + BATCH_2, new_record=False)
    assert versions(spark, NR_HISTORY) == expected_versions(BATCH_1 + BATCH_2, new_record=True)
    # Key 3's late change (LSN 700, after 800 in Kafka) sits between its neighbours.
    assert [(v[2], v[3], v[4], v[5]) for v in versions(spark, HISTORY) if v[0] == 3] == [
        ("cy@x", 3000, 7000, False), ("cy@between", 7000, 8000, False), ("cy@late-not", 8000, None, True)]
    # Key 1: an email updated to NULL and back is three versions.
    assert [v[2] for v in versions(spark, HISTORY) if v[0] == 1] == ["ann@x", None, "ann@y"]

    produce_and_ingest(target, schemas, BATCH_3)
    run_all(project)
    everything = BATCH_1 + BATCH_2 + BATCH_3
    assert versions(spark, HISTORY) == expected_versions(everything, new_record=False)
    assert versions(spark, NR_HISTORY) == expected_versions(everything, new_record=True)
    # The late update of key 2 ends where its delete did, in a later run than the delete's (invalidate keeps
    # the delete on the version it closed).
    assert [(v[1], v[3], v[4], v[5]) for v in versions(spark, HISTORY) if v[0] == 2] == [
        ("Bob", 1000, 3500, False), ("Bobby", 3500, 4000, False), ("Bob", 6000, None, True)]

    # The same Kafka records landed twice in the raw table (a batch written again): nothing changes.
    before = versions(spark, HISTORY), versions(spark, NR_HISTORY)
    spark.sql(f"insert into zync.{RAW} select * from zync.{RAW} where kafka.offset >= 6")
    run_all(project)
    assert (versions(spark, HISTORY), versions(spark, NR_HISTORY)) == before
    # A rebuild from the raw history (records twice at one Kafka position, changes sent again, late ones)
    # makes the same versions the runs made one batch at a time.
    project.dbt("run", "--full-refresh", "--select", HISTORY, NR_HISTORY)
    assert (versions(spark, HISTORY), versions(spark, NR_HISTORY)) == before

    # A mirror applies a key's changes in Kafka order, its history in source order: with keys 2 and 3 changed
    # late by source position they differ, which the current-versions test finds; the others still pass.
    tested = project.dbt("test", "--select", HISTORY, NR_HISTORY, expect_success=False).results
    statuses = {r.node.name: str(r.status) for r in tested if r.node.name.startswith("zync_history")}
    failed = {name: r.failures for r in tested for name in [r.node.name] if statuses.get(name) == "fail"}
    assert len(statuses) == 6 and list(statuses.values()).count("pass") == 4, statuses
    assert len(failed) == 2 and all(name.startswith("zync_history_current_is_mirror") for name in failed), failed
    # Keys 2 and 3, each once on either side.
    assert sorted(failed.values()) == [4, 4], failed


def test_as_of_reads_the_table_at_a_source_time(spark, project):
    """zync_as_of over the history the test above built: the rows valid at a time, deleted keys left out."""
    def as_of(mirror: str, at_ms: int) -> list[tuple]:
        stamp = rows(spark, f"select cast(timestamp_millis({at_ms}) as string)")[0][0]
        query = project.dbt("compile", "--inline",
                            f"select id, name, email from {{{{ zync_as_of(ref('{mirror}'), '{stamp}') }}}} as t")
        compiled = query.results[0].node.compiled_code
        return sorted(rows(spark, compiled))

    # Derived from the events: at 3700 key 1 had its NULL email, key 2 its late update (before its delete at
    # 4000), key 3 its first version; at 4500 key 2 was deleted; at 7500 key 3 had the late change's email.
    assert as_of(MIRROR, 3700) == [(1, "Ann", None), (2, "Bobby", "bob@x"), (3, "Cy", "cy@x")]
    assert as_of(MIRROR, 4500) == [(1, "Ann", None), (3, "Cy", "cy@x")]
    assert as_of(NR_MIRROR, 4500) == [(1, "Ann", None), (3, "Cy", "cy@x")]
    assert as_of(MIRROR, 7500) == [(1, "Ann", "ann@y"), (2, "Bob", "bob@new"), (3, "Cy", "cy@between")]
    assert as_of(MIRROR, 999) == []
