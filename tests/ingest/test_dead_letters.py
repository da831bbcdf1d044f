"""errors.tolerance: the default stop, dead letters with `all`, a restart after a kill between the two
commits, a replay once the missing schema is registered, `zync etl status` and the dbt warning test.

One scenario checks several things in turn: each step costs Spark jobs, and the suite has a budget.
"""

from __future__ import annotations

import sys

import fastavro
import pytest

from compiler.properties import render_sources
from compiler.spec import load_transform
from ingest.from_kafka import Ingest, ingest_progress
from tests.ingest.conftest import table_rows, unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event, row
from service import etl_status
from zync.tables import dead_letter_table_name, raw_table_name
from zync.wire import DecodeError, WriterSchema, encode

NOT_AVRO = b'{"json": "not avro"}'


def _event(i: int) -> dict:
    return event("c", {"id": i, "name": f"n{i}", "qty": i})


def _ingest(target, topic: str, **options) -> Ingest:
    return Ingest(target, [topic], progress=ingest_progress(live=False, stream=sys.stderr), **options)


def _offsets(spark, name: str) -> list[int]:
    return [r.kafka.offset for r in table_rows(spark, name)]


def test_dead_letters_land_beside_the_batch_survive_a_restart_and_replay(producer, target, spark, tmp_path):
    topic = producer.topic(unique("dlq"))
    raw, dead = f"zync.{raw_table_name(topic)}", f"zync.{dead_letter_table_name(raw_table_name(topic))}"
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": i}, _event(i)) for i in range(2)])  # offsets 0, 1
    key = producer.registry.register(f"{topic}-key", KEY)
    good = producer.registry.register(f"{topic}-value", envelope(ROW_V1))
    # A writer schema the table cannot take (`id` long -> string), from another subject of the registry.
    incompatible = producer.registry.register(
        f"{topic}-other-value", envelope(row([{"name": "id", "type": "string"}, {"name": "name", "type": "string"},
                                              {"name": "qty", "type": "int"}])))
    # The id the registry gives the next new schema: a message names it before it is registered.
    probe = producer.registry.register(f"{topic}-probe", {"type": "record", "name": f"P{topic}", "fields": []})
    missing_schema = {**envelope(ROW_V1), "doc": f"registered late for {topic}"}
    missing = WriterSchema(probe.id + 1, missing_schema, fastavro.parse_schema(missing_schema))

    producer.producer.produce(topic, key=encode(key, {"id": 2}), value=NOT_AVRO, headers=[("trace", b"t-2")])  # 2
    producer.raw(topic, encode(key, {"id": 3}), encode(good, _event(3)))  # 3
    producer.raw(topic, encode(key, {"id": 4}), encode(missing, _event(4)))  # 4: unknown schema id
    producer.raw(topic, encode(key, {"id": 5}), b"\x00" + good.id.to_bytes(4, "big") + b"\x02\x08")  # 5: truncated
    producer.raw(topic, b"plain-key", encode(good, _event(6)))  # 6: a key the table cannot hold
    producer.raw(topic, encode(key, {"id": 7}),
                 encode(incompatible, event("c", {"id": "seven", "name": "n7", "qty": 7})))  # 7
    producer.raw(topic, encode(key, {"id": 8}), encode(good, _event(8)))  # 8
    producer.flush()

    # errors.tolerance none (the default): a clear stop at the first bad message, everything before committed.
    with pytest.raises(DecodeError, match=rf"offset 2 value: not Avro.*--errors-tolerance all"):
        _ingest(target, topic).run(exit_after=0.0)
    assert _offsets(spark, raw) == [0, 1]
    assert not spark.catalog.tableExists(dead)

    # all: each bad message is a dead letter with its bytes and error; the good ones around them land.
    job = _ingest(target, topic, errors_tolerance="all")
    assert job.run(exit_after=0.0) == 2
    assert job.batches_read["consumer"] == 1  # Spark's batch failed on purpose, the consumer found the messages
    assert _offsets(spark, raw) == [0, 1, 3, 8]
    letters = {r.kafka.offset: r for r in table_rows(spark, dead)}
    assert sorted(letters) == [2, 4, 5, 6, 7]
    expected = {2: "offset 2 value: not Avro", 4: f"schema id {missing.id} is not in the registry",
                5: "offset 5 value: cannot decode with writer schema id", 6: "offset 6 key: not Avro",
                7: "the value schema changed incompatibly"}
    for offset, text in expected.items():
        assert text in letters[offset].error, (offset, letters[offset].error)
        assert letters[offset].kafka.topic == topic and letters[offset].kafka.partition == 0
    assert bytes(letters[2].value) == NOT_AVRO and [(h.key, bytes(h.value)) for h in letters[2].headers] == [
        ("trace", b"t-2")]
    assert bytes(letters[6].key) == b"plain-key" and letters[6].kafka.key_schema_id is None
    assert letters[7].kafka.value_schema_id == incompatible.id and letters[4].dead_lettered_at is not None

    # A kill after the dead letters' commit and before the raw rows': the state it leaves is this one.
    spark.sql(f"delete from {raw} where kafka.offset in (3, 8)")
    # Meanwhile the missing schema is registered: message 4 would decode now, yet it is a dead letter
    # already, so the restart skips it; nothing is lost and nothing lands twice.
    assert producer.registry.register(f"{topic}-value", missing_schema).id == missing.id
    assert _ingest(target, topic, errors_tolerance="all").run(exit_after=0.0) == 2
    assert _offsets(spark, raw) == [0, 1, 3, 8]
    assert sorted(r.kafka.offset for r in table_rows(spark, dead)) == [2, 4, 5, 6, 7]

    # Replay: message 4 decodes now and lands at its own offset; the others stay; a second replay does nothing.
    assert _ingest(target, topic).replay_dead_letters() == (1, 4)
    replayed = {r.kafka.offset: r for r in table_rows(spark, raw)}
    assert sorted(replayed) == [0, 1, 3, 4, 8] and replayed[4].value.after.id == 4
    assert replayed[4].kafka.value_schema_id == missing.id
    assert sorted(r.kafka.offset for r in table_rows(spark, dead)) == [2, 5, 6, 7]
    assert _ingest(target, topic).replay_dead_letters() == (0, 4)
    assert _offsets(spark, raw) == [0, 1, 3, 4, 8]

    # The project's config: errors.tolerance on a transform input becomes the raw source's meta, and the
    # dead-letter table a source with a warning test; `zync etl status` counts the dead letters.
    transform = tmp_path / "dlq.yml"
    transform.write_text(
        f"inputs:\n  - {{topic: {topic}, table: {raw_table_name(topic)}, errors.tolerance: all}}\n"
        f"output: {{topic: {topic}_out, model: {raw_table_name(topic)}_out}}\n"
        "transforms:\n  - type: stateless\n    where: value.op = 'c'\n"
        f"    in: {topic}\n    out: {topic}_out\n    key: in.key\n    value: {{id: in.value.after.id}}\n")
    sources = render_sources([load_transform(transform)], [transform])
    assert "zync_errors_tolerance: all" in sources
    assert f"name: {dead_letter_table_name(raw_table_name(topic))}" in sources
    assert "test_name: zync_no_dead_letters" in sources and "severity: warn" in sources
    (status,) = etl_status.collect(target, [transform], kafka=False)
    (partition,) = status.inputs[0].partitions
    assert (partition.latest_offset, partition.dead_letters, partition.dead_letters_below_cursor) == (8, 4, 0)
    assert "dead letters" in etl_status.render([status])


def test_the_dbt_warning_test_warns_while_dead_letters_wait(spark, dbt):
    """The demo's dead-letter source (models/raw/__sources.yml): no table passes, a dead letter warns."""
    name = "zync." + dead_letter_table_name("raw_invoices")
    spark.sql(f"drop table if exists {name}")
    select = ["--select", "source:raw.raw_invoices__dead_letters"]
    try:
        result = dbt("test", *select)
        assert [str(r.status) for r in result.result.results] == ["pass"]
        spark.sql(f"create table {name} (kafka struct<topic: string, partition: int, offset: bigint>, "
                  "error string) using delta")
        spark.sql(f"insert into {name} values (named_struct('topic', 'Invoices', 'partition', 0, 'offset', 7L), "
                  "'not Avro')")
        result = dbt("test", *select)
        (warned,) = result.result.results
        assert (str(warned.status), warned.failures) == ("warn", 1)
    finally:
        spark.sql(f"drop table if exists {name}")
