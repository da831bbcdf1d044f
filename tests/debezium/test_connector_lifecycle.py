"""The connector helpers on a real Debezium source: stopped, resumed and restarted mid-stream, no
change is lost (Debezium delivers at least once: a restart may replay, never skip)."""

from __future__ import annotations

import pytest

from zync import topics
from zync.connect import ConnectorFailed

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


def test_a_bad_config_fails_with_the_task_trace(debezium):
    """A connector whose task cannot start surfaces Connect's trace as an error, not a timeout."""
    name = "dbz-broken-source"
    with pytest.raises(ConnectorFailed, match="dbz_no_such_database|does not exist"):
        debezium.source(name, "dbz_no_such_database", ["public.items"], "dbzx")
    debezium.delete(name)
