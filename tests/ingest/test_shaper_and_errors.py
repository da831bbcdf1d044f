"""--shaper over the real batch, and messages that cannot be decoded."""

from __future__ import annotations

import pytest

from zync.shaper import ShaperError
from tests.ingest.conftest import table_rows, unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event
from zync.wire import DecodeError
from zync.tables import raw_table_name


def _events(n: int):
    return [({"id": i}, event("c", {"id": i, "name": f"n{i}", "qty": i})) for i in range(n)]


def test_a_shaper_reshapes_the_batch_and_keeps_the_envelope(producer, ingest, spark, tmp_path):
    topic = producer.topic(unique("shaped"))
    producer.send(topic, KEY, envelope(ROW_V1), _events(4))
    shaper = tmp_path / "shaper.sql"
    shaper.write_text("select kafka, key, value.after as value, upper(value.op) as op from batch")
    assert ingest(topic, shaper=shaper) == 4
    rows = table_rows(spark, f"zync.{raw_table_name(topic)}")
    assert spark.table(f"zync.{raw_table_name(topic)}").columns == ["kafka", "key", "value", "op"]
    assert [(r.kafka.offset, r.value.id, r.value.name, r.op) for r in rows] == [
        (i, i, f"n{i}", "C") for i in range(4)]
    # The resume point is still the largest offset read: a rerun takes nothing again.
    assert ingest(topic, shaper=shaper) == 0


def test_a_shaper_that_changes_kafka_is_refused_before_reading(producer, ingest, spark, tmp_path):
    topic = producer.topic(unique("badshaper"))
    producer.send(topic, KEY, envelope(ROW_V1), _events(1))
    shaper = tmp_path / "shaper.sql"
    shaper.write_text("select named_struct('topic', kafka.topic, 'partition', 0, 'offset', 0L) as kafka, "
                      "key, value from batch")
    with pytest.raises(ShaperError, match=r"shaper .*shaper.sql rewrites the `kafka` column"):
        ingest(topic, shaper=shaper)
    assert not spark.catalog.tableExists(f"zync.{raw_table_name(topic)}")


def test_a_message_that_is_not_avro_stops_before_its_offset(producer, ingest, spark):
    topic = producer.topic(unique("notavro"))
    producer.send(topic, KEY, envelope(ROW_V1), _events(2))
    producer.raw(topic, b"\x00\x00\x00\x00\x01", b'{"json": "not avro"}')
    producer.send(topic, KEY, envelope(ROW_V1), _events(1))
    producer.flush()
    with pytest.raises(DecodeError, match=rf"topic {topic} partition 0 offset 2 value: not Avro"):
        ingest(topic)
    assert [r.kafka.offset for r in table_rows(spark, f"zync.{raw_table_name(topic)}")] == [0, 1]


@pytest.mark.parametrize("reader", ["spark", "python"])
def test_a_corrupt_avro_body_stops_before_its_offset(producer, ingest, spark, reader):
    topic = producer.topic(unique(f"corrupt_{reader}"))
    producer.send(topic, KEY, envelope(ROW_V1), _events(3))
    schema_id = producer.registry.register(f"{topic}-value", envelope(ROW_V1)).id
    key = producer.registry.register(f"{topic}-key", KEY)
    from zync.wire import encode

    # The right header, then a body cut short: only decoding finds out.
    producer.raw(topic, encode(key, {"id": 7}), b"\x00" + schema_id.to_bytes(4, "big") + b"\x02\x08")
    producer.send(topic, KEY, envelope(ROW_V1), _events(1))
    with pytest.raises(DecodeError, match=rf"topic {topic} partition 0 offset 3 value: cannot decode"):
        ingest(topic, reader=reader)
    assert [r.kafka.offset for r in table_rows(spark, f"zync.{raw_table_name(topic)}")] == [0, 1, 2]
