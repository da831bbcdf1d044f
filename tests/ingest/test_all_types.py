"""Every Avro type through Kafka, both readers (Spark's and the consumer's, spark-avro decoding either way) and
Delta: the column types are spark-avro's, and the values read back are the values produced."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from tests.ingest.conftest import table_rows, unique
from tests.ingest.schemas import KEY
from zync.tables import raw_table_name

UTC = dt.timezone.utc
A = {"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]}
B = {"type": "record", "name": "B", "fields": [{"name": "b", "type": "string"}]}
SCHEMA = {"type": "record", "name": "AllTypes", "namespace": "ingest.test", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
    {"name": "raw", "type": "bytes"},
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "arr", "type": {"type": "array", "items": "long"}},
    {"name": "m", "type": {"type": "map", "values": ["null", "string"]}},
    {"name": "rec", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
    {"name": "opt", "type": ["null", "string"], "default": None},
    {"name": "il", "type": ["int", "long"]},
    {"name": "multi", "type": ["null", "string", "long", A, B]},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}},
    {"name": "decf", "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal",
                              "precision": 18, "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
]}
VALUES = [
    {"b": True, "i": -1, "l": 2**40, "f": 1.5, "d": 0.25, "s": "é", "raw": b"\x00\x01", "fx": b"abcd",
     "e": "GREEN", "arr": [1, 2], "m": {"k": "v", "n": None}, "rec": {"x": 7}, "opt": None, "il": 3,
     "multi": ("ingest.test.B", {"b": "bee"}), "dec": decimal.Decimal("123.456"),
     "decf": decimal.Decimal("-5.25"), "day": dt.date(2024, 2, 29),
     "tsm": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
     "tsu": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
     "lts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901), "id": "12345678-1234-5678-1234-567812345678",
     "tm": dt.time(1, 2, 3, 4000)},
    {"b": False, "i": 0, "l": 0, "f": 0.0, "d": -1e300, "s": "", "raw": b"", "fx": b"\xff\xff\xff\xff",
     "e": "RED", "arr": [], "m": {}, "rec": {"x": 0}, "opt": "set", "il": 4,
     "multi": 12, "dec": decimal.Decimal("0.001"), "decf": decimal.Decimal("0.00"), "day": dt.date(1970, 1, 1),
     "tsm": dt.datetime(1970, 1, 1, tzinfo=UTC), "tsu": dt.datetime(2030, 12, 31, 23, 59, 59, tzinfo=UTC),
     "lts": dt.datetime(2000, 1, 1), "id": "00000000-0000-0000-0000-000000000000", "tm": dt.time(0, 0)},
]


@pytest.mark.parametrize("reader", ["spark", "python"])
def test_every_type_lands_in_delta_with_its_value(producer, ingest, spark, reader):
    topic = producer.topic(unique(f"types_{reader}"))
    producer.send(topic, KEY, SCHEMA, [({"id": i}, v) for i, v in enumerate(VALUES)])
    assert ingest(topic, reader=reader) == 2
    table = f"zync.{raw_table_name(topic)}"
    types = {f.name: f.dataType.simpleString() for f in spark.table(table).schema["value"].dataType.fields}
    assert types == {
        "b": "boolean", "i": "int", "l": "bigint", "f": "float", "d": "double", "s": "string", "raw": "binary",
        "fx": "binary", "e": "string", "arr": "array<bigint>", "m": "map<string,string>", "rec": "struct<x:int>",
        "opt": "string", "il": "bigint",
        "multi": "struct<member0:string,member1:bigint,member2:struct<a:int>,member3:struct<b:string>>",
        "dec": "decimal(9,3)", "decf": "decimal(18,2)", "day": "date", "tsm": "timestamp", "tsu": "timestamp",
        "lts": "timestamp_ntz", "id": "string", "tm": "int"}
    first, second = (r.value for r in table_rows(spark, table))
    assert (first.b, first.i, first.l, first.f, first.d, first.s) == (True, -1, 2**40, 1.5, 0.25, "é")
    assert (bytes(first.raw), bytes(first.fx), first.e) == (b"\x00\x01", b"abcd", "GREEN")
    assert first.arr == [1, 2] and first.m == {"k": "v", "n": None} and first.rec.x == 7
    assert first.opt is None and second.opt == "set" and first.il == 3
    assert first.multi.asDict(recursive=True) == {"member0": None, "member1": None, "member2": None,
                                                  "member3": {"b": "bee"}}
    assert second.multi.asDict() == {"member0": None, "member1": 12, "member2": None, "member3": None}
    assert (first.dec, first.decf, first.day) == (decimal.Decimal("123.456"), decimal.Decimal("-5.25"),
                                                  dt.date(2024, 2, 29))
    # The session time zone is UTC (profiles), so TIMESTAMP values come back as naive UTC.
    assert first.tsm == dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    assert first.tsu == dt.datetime(2024, 1, 2, 3, 4, 5, 678901)
    assert first.lts == dt.datetime(2024, 1, 2, 3, 4, 5, 678901)
    assert first.id == "12345678-1234-5678-1234-567812345678" and first.tm == 3_723_004
    assert second.tsm == dt.datetime(1970, 1, 1) and second.day == dt.date(1970, 1, 1) and second.tm == 0
