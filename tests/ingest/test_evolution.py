"""Schema evolution on the real registry and Delta: compatible versions evolve the table,
an incompatible one stops at its offset with nothing after it committed."""

from __future__ import annotations

import pytest

from ingest.schemas import IncompatibleChangeError
from tests.ingest.conftest import table_rows, unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event, row
from zync.tables import raw_table_name

ROW_V2 = row([{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
              {"name": "qty", "type": "long"},  # widened from int
              {"name": "email", "type": ["null", "string"], "default": None}])  # added


def test_added_and_widened_fields_evolve_the_table(producer, ingest, spark):
    topic = producer.topic(unique("evolve"))
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": 1}, event("c", {"id": 1, "name": "a", "qty": 5}))])
    producer.send(topic, KEY, envelope(ROW_V2),
                  [({"id": 2}, event("c", {"id": 2, "name": "b", "qty": 2**40, "email": "b@x"}))])
    assert ingest(topic) == 2
    table = f"zync.{raw_table_name(topic)}"
    after = spark.table(table).schema["value"].dataType["after"].dataType
    assert after.names == ["id", "name", "qty", "email"]
    assert after["qty"].dataType.simpleString() == "bigint"
    rows = table_rows(spark, table)
    assert [r.value.after.asDict() for r in rows] == [
        {"id": 1, "name": "a", "qty": 5, "email": None},
        {"id": 2, "name": "b", "qty": 2**40, "email": "b@x"}]
    assert rows[0].kafka.value_schema_id != rows[1].kafka.value_schema_id


@pytest.mark.parametrize("case, incompatible, reason", [
    ("retype", row([{"name": "id", "type": "long"}, {"name": "name", "type": "int"},
                    {"name": "qty", "type": "int"}]), r"value\.before\.name: type changed from string to int"),
    ("removed", row([{"name": "id", "type": "long"}, {"name": "qty", "type": "int"}]),
     r"value\.before\.name: a required field the table keeps was removed"),
])
def test_an_incompatible_version_stops_at_its_offset(producer, ingest, spark, case, incompatible, reason):
    topic = producer.topic(unique(f"incompat_{case}"))
    good = [({"id": i}, event("c", {"id": i, "name": f"n{i}", "qty": i})) for i in range(3)]
    producer.send(topic, KEY, envelope(ROW_V1), good)
    bad = {"id": 9, "name": 9, "qty": 9} if case == "retype" else {"id": 9, "qty": 9}
    producer.send(topic, KEY, envelope(incompatible), [({"id": 9}, event("c", bad))])
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": 10}, event("c", {"id": 10, "name": "late", "qty": 1}))])
    with pytest.raises(IncompatibleChangeError) as caught:
        ingest(topic)
    text = str(caught.value)
    assert f"topic {topic} partition 0 offset 3" in text
    assert "old: writer schema id" in text and "new: writer schema id" in text
    assert '"name": "name", "type": "string"' in text  # the old schema, in full
    assert reason.replace("\\", "") in text
    rows = table_rows(spark, f"zync.{raw_table_name(topic)}")
    assert [r.kafka.offset for r in rows] == [0, 1, 2]


def test_the_connect_names_of_the_writer_schemas_are_kept_beside_the_table(producer, ingest, spark):
    import json

    from ingest.table import CONNECT_NAMES_PROPERTY

    topic = producer.topic(unique("connect_names"))
    due = {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"}
    v1 = row([{"name": "id", "type": "long"}, {"name": "due", "type": ["null", due], "default": None}])
    producer.send(topic, KEY, envelope(v1), [({"id": 1}, event("c", {"id": 1, "due": 20_000}))])
    assert ingest(topic) == 1
    table = f"zync.{raw_table_name(topic)}"

    def stored() -> dict:
        props = {r["key"]: r["value"] for r in spark.sql(f"show tblproperties {table}").collect()}
        return json.loads(props[CONNECT_NAMES_PROPERTY])

    assert stored() == {"value.before.due": "io.debezium.time.Date", "value.after.due": "io.debezium.time.Date"}
    # A later version adds a semantic field: its name joins; the raw value stays as written.
    at = {"type": "string", "connect.version": 1, "connect.name": "io.debezium.time.ZonedTimestamp"}
    v2 = row([{"name": "id", "type": "long"}, {"name": "due", "type": ["null", due], "default": None},
              {"name": "at", "type": ["null", at], "default": None}])
    producer.send(topic, KEY, envelope(v2), [({"id": 2}, event("c", {"id": 2, "due": 1, "at": "2026-01-01T00:00:00Z"}))])
    assert ingest(topic) == 1
    assert stored()["value.after.at"] == "io.debezium.time.ZonedTimestamp"
    assert [r.value.after.due for r in table_rows(spark, table)] == [20_000, 1]
