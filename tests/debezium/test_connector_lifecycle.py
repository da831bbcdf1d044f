"""The connector helpers on a real Debezium source: stopped, resumed and restarted mid-stream, no
change is lost (Debezium delivers at least once: a restart may replay, never skip)."""

from __future__ import annotations

import pytest

from zync import kafka_client, topics
from stack.connect import ConnectorFailed
from zync.errors import ZyncError

DB = "dbz_lifecycle"
CONNECTOR = "dbz-lifecycle-source"
TOPIC = "dbzl.public.items"


def changes(target) -> list[tuple]:
    records = topics.consume(target, TOPIC, from_beginning=True, exit_after=1.0)
    return [(r["value"]["op"], r["key"]["id"], (r["value"]["after"] or {}).get("v"))
            for r in records if r["value"] is not None]


def test_stop_resume_and_restart_lose_nothing(debezium, target):
    debezium.database(DB)
    debezium.psql("create table items (id integer primary key, v text); "
                  "insert into items values (1, 'a'), (2, 'b'), (3, 'c');", DB)
    debezium.source(CONNECTOR, DB, ["public.items"], "dbzl")
    debezium.wait_records(TOPIC, 3)

    debezium.stop(CONNECTOR)
    debezium.psql("insert into items values (4, 'd'), (5, 'e'); update items set v = 'B' where id = 2;", DB)
    debezium.resume(CONNECTOR)
    debezium.wait_records(TOPIC, 6)

    debezium.restart(CONNECTOR)
    debezium.psql("delete from items where id = 1; insert into items values (6, 'f');", DB)
    debezium.wait_records(TOPIC, 6 + 3)  # a delete, its tombstone, an insert

    got = changes(target)
    expected = [("r", 1, "a"), ("r", 2, "b"), ("r", 3, "c"), ("c", 4, "d"), ("c", 5, "e"), ("u", 2, "B"),
                ("d", 1, None), ("c", 6, "f")]
    # In order, each at least once (a restart may replay a change; the test's own waits make it rare).
    deduplicated = [c for i, c in enumerate(got) if c not in got[:i]]
    assert deduplicated == expected, got


def test_a_bad_config_is_refused_and_a_failed_task_raises_its_trace(debezium, target):
    """Connect refuses a source whose database does not exist when it validates the config; a sink
    whose task fails (here on a record that is not Avro) surfaces its stack trace as an error, not
    as a timeout."""
    with pytest.raises(ZyncError, match='database "dbz_no_such_database" does not exist'):
        debezium.source("dbz-broken-source", "dbz_no_such_database", ["public.items"], "dbzx")
    debezium.delete("dbz-broken-source")

    topic = "dbz_not_avro"
    kafka_client.ensure_topic(target, topic)
    producer = kafka_client.producer(target)
    producer.produce(topic, key=b"k", value=b"plain text, not the Confluent wire format")
    assert producer.flush(30) == 0
    with pytest.raises(ConnectorFailed, match=r"(?s)task 0 FAILED.*Caused by: "):
        debezium.sink("dbz-broken-sink", [topic], debezium.database("dbz_broken_sink"))
        debezium.connect.watch("dbz-broken-sink", 60)
    debezium.delete("dbz-broken-sink")
