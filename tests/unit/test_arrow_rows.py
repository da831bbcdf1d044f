"""The Python path's pure parts: which writer schemas it decodes, the rows it builds, what it refuses,
and the Delta statistics of its files (ingest/arrow_rows.py, ingest/data_file.py).

Spark's own answer for the same messages is the integration tests' (tests/ingest/test_python_rows.py);
here the Spark types are written out, as spark-avro gives them for these schemas.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json

import fastavro
import pyarrow as pa
import pytest
from pyspark.sql import types as T

from ingest.arrow_rows import ArrowRows, _null_in_required, base_schema
from ingest.data_file import NotDecodable
from ingest.data_file import not_writable, statistics
from ingest.decode import Message
from zync.envelope import raw_row_schema
from zync.wire import WriterSchema, encode

UTC = dt.timezone.utc
VALUE = {"type": "record", "name": "V", "namespace": "t", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}},
]}
VALUE_TYPE = T.StructType([
    T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType(), True),
    T.StructField("day", T.DateType(), False), T.StructField("at", T.TimestampType(), False),
    T.StructField("tm", T.IntegerType(), False), T.StructField("uid", T.StringType(), False),
    T.StructField("amount", T.DecimalType(5, 2), False),
])
KEY = {"type": "record", "name": "K", "namespace": "t", "fields": [{"name": "id", "type": "long"}]}
KEY_TYPE = T.StructType([T.StructField("id", T.LongType(), False)])


class Writers:
    """Writer schemas by id with their Spark types, as ingest.schemas.WriterSchemas answers."""

    def __init__(self, **by_id: tuple[dict, T.DataType]):
        self.by_id = {int(k.lstrip("_")): v for k, v in by_id.items()}

    def avro(self, schema_id: int):
        return self.by_id[schema_id][0]

    def spark_type(self, schema_id: int):
        return self.by_id[schema_id][1]


def _message(offset: int, key: dict | None, value: dict | None, value_schema=VALUE, value_id: int = 2) -> Message:
    k = encode(WriterSchema(1, KEY, fastavro.parse_schema(KEY)), key) if key is not None else None
    v = encode(WriterSchema(value_id, value_schema, fastavro.parse_schema(value_schema)), value) \
        if value is not None else None
    return Message("t", 0, offset, 1_700_000_000_123 if offset else 0, k, v,
                   1 if k is not None else None, value_id if v is not None else None)


ROW = {"id": 7, "name": None, "day": dt.date(1582, 10, 15), "at": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
       "tm": dt.time(1, 2, 3, 4000), "uid": "12345678-1234-5678-1234-567812345678",
       "amount": decimal.Decimal("-1.25")}


def test_rows_are_the_table_types_values_as_spark_avro_gives_them():
    rows = ArrowRows(Writers(_1=(KEY, KEY_TYPE), _2=(VALUE, VALUE_TYPE)))
    table = rows.rows([_message(0, {"id": 7}, ROW), _message(1, {"id": 7}, None)], raw_row_schema(KEY_TYPE, VALUE_TYPE))
    first, tombstone = table.to_pylist()
    assert first["kafka"] == {"topic": "t", "partition": 0, "offset": 0, "timestamp": None,
                              "key_schema_id": 1, "value_schema_id": 2}
    assert tombstone["kafka"]["timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert tombstone["value"] is None and tombstone["key"] == {"id": 7}
    # time-of-day as spark-avro keeps it (milliseconds), a uuid as its text, the calendar's first day as it is.
    assert first["value"] == {**ROW, "tm": 3_723_004}


def test_a_writer_missing_a_nullable_column_reads_null_and_a_wider_column_takes_its_values():
    narrow = {"type": "record", "name": "V", "namespace": "t", "fields": [{"name": "id", "type": "int"}]}
    wide = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("note", T.StringType(), True)])
    rows = ArrowRows(Writers(_1=(KEY, KEY_TYPE), _3=(narrow, T.StructType([T.StructField("id", T.IntegerType(), False)]))))
    table = rows.rows([_message(0, {"id": 1}, {"id": 5}, narrow, 3)], raw_row_schema(KEY_TYPE, wide))
    assert table.column("value").to_pylist() == [{"id": 5, "note": None}]


def test_what_would_need_the_table_evolved_or_may_decode_apart_is_refused():
    extra = {"type": "record", "name": "V", "namespace": "t", "fields": [
        {"name": "id", "type": "long"}, {"name": "more", "type": "long"}]}
    rows = ArrowRows(Writers(_1=(KEY, KEY_TYPE), _4=(extra, T.StructType([
        T.StructField("id", T.LongType(), False), T.StructField("more", T.LongType(), False)]))))
    with pytest.raises(NotDecodable, match="evolved"):
        rows.rows([_message(0, {"id": 1}, {"id": 1, "more": 2}, extra, 4)], raw_row_schema(KEY_TYPE, KEY_TYPE))
    with pytest.raises(NotDecodable, match="several types"):
        base_schema({"type": "record", "name": "U", "fields": [{"name": "u", "type": ["null", "int", "string"]}]})
    with pytest.raises(NotDecodable, match="columns other than"):
        rows.rows([], T.StructType([*raw_row_schema(KEY_TYPE, KEY_TYPE).fields, T.StructField("x", T.IntegerType())]))


def test_a_value_that_does_not_fit_its_column_is_refused_not_changed():
    # A decimal(5, 2) column and a writer whose decimal has more digits than it holds.
    wider = json.loads(json.dumps(VALUE))
    wider["fields"][-1]["type"]["precision"] = 9
    rows = ArrowRows(Writers(_1=(KEY, KEY_TYPE), _5=(wider, VALUE_TYPE)))
    with pytest.raises(NotDecodable, match="does not convert"):
        rows.rows([_message(0, {"id": 1}, {**ROW, "amount": decimal.Decimal("1234567.89")}, wider, 5)],
                  raw_row_schema(KEY_TYPE, VALUE_TYPE))


def test_base_schema_keeps_only_the_logical_types_spark_avro_maps():
    stripped = base_schema(VALUE)
    logical = {f["name"]: f["type"].get("logicalType") for f in stripped["fields"] if isinstance(f["type"], dict)}
    assert logical == {"day": "date", "at": "timestamp-millis", "tm": None, "uid": None, "amount": "decimal"}
    # Named types are followed where they are used again.
    twice = {"type": "record", "name": "P", "namespace": "n", "fields": [
        {"name": "a", "type": {"type": "record", "name": "Row", "fields": [{"name": "x", "type": "int"}]}},
        {"name": "b", "type": ["null", "Row"]}]}
    assert base_schema(twice)["fields"][1]["type"] == ["null", "Row"]


def test_a_null_in_a_not_null_field_is_found_only_where_its_parents_hold_values():
    inner = T.StructType([T.StructField("x", T.IntegerType(), False)])
    outer = T.StructType([T.StructField("in", inner, True)])
    arrow = pa.struct([pa.field("in", pa.struct([pa.field("x", pa.int32())]))])
    # A null parent (the whole `in`, or the whole row) holds no value to check.
    assert not _null_in_required(pa.array([{"in": None}, None, {"in": {"x": 1}}], arrow), outer)
    assert _null_in_required(pa.array([{"in": {"x": None}}], arrow), outer)
    listed = T.ArrayType(inner, containsNull=False)
    assert _null_in_required(pa.array([[{"x": 1}, None]], pa.list_(pa.struct([pa.field("x", pa.int32())]))), listed)
    assert not _null_in_required(pa.array([None, []], pa.list_(pa.struct([pa.field("x", pa.int32())]))), listed)


def test_statistics_are_exact_where_kept_and_absent_where_delta_would_round():
    schema = raw_row_schema(KEY_TYPE, T.StructType([
        T.StructField("source", T.StructType([T.StructField("ts_ms", T.LongType())])),
        T.StructField("at", T.TimestampType()), T.StructField("name", T.StringType())]))
    value = pa.struct([pa.field("source", pa.struct([pa.field("ts_ms", pa.int64())])),
                       pa.field("at", pa.timestamp("us", tz="UTC")), pa.field("name", pa.string())])
    kafka = pa.array([
        {"topic": "t", "partition": 0, "offset": 5, "timestamp": dt.datetime(2026, 1, 1, tzinfo=UTC),
         "key_schema_id": 1, "value_schema_id": 2},
        {"topic": "t", "partition": 0, "offset": 9, "timestamp": dt.datetime(2026, 1, 1, 0, 0, 1, 500000, tzinfo=UTC),
         "key_schema_id": 1, "value_schema_id": None}], pa.struct([
            pa.field("topic", pa.string()), pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
            pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("key_schema_id", pa.int32()),
            pa.field("value_schema_id", pa.int32())]))
    table = pa.Table.from_arrays([
        kafka, pa.array([{"id": 3}, {"id": 1}], pa.struct([pa.field("id", pa.int64())])),
        pa.array([{"source": {"ts_ms": 100}, "at": dt.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC), "name": "x"},
                  None], value)], names=["kafka", "key", "value"])
    stats = statistics(table, schema, ["kafka", "key", "value.source.ts_ms", "value.at", "value.name"])
    assert stats["numRecords"] == 2
    assert stats["minValues"] == {
        "kafka": {"topic": "t", "partition": 0, "offset": 5, "timestamp": "2026-01-01T00:00:00.000Z",
                  "key_schema_id": 1, "value_schema_id": 2},
        "key": {"id": 1}, "value": {"source": {"ts_ms": 100}, "name": "x"}}
    assert stats["maxValues"]["kafka"]["offset"] == 9
    assert stats["maxValues"]["kafka"]["timestamp"] == "2026-01-01T00:00:01.500Z"
    # A null row's leaves count as nulls, as Delta counts them; a microsecond time: no statistics.
    assert stats["nullCount"]["value"] == {"source": {"ts_ms": 1}, "name": 1}
    assert stats["nullCount"]["kafka"]["value_schema_id"] == 1 and stats["nullCount"]["kafka"]["topic"] == 0


def test_a_string_longer_than_deltas_prefix_has_no_statistics():
    schema = T.StructType([T.StructField("s", T.StringType())])
    short, long = "é" * 32, "x" * 33
    assert statistics(pa.table({"s": [short, "a"]}), schema, ["s"])["maxValues"] == {"s": short}
    assert "s" not in statistics(pa.table({"s": [long, "a"]}), schema, ["s"]).get("maxValues", {})


def test_a_table_delta_writes_otherwise_is_left_to_spark():
    schema = raw_row_schema(KEY_TYPE, KEY_TYPE)
    stats = {"delta.dataSkippingStatsColumns": "kafka,key"}
    assert not_writable(schema.json(), stats, ()) is None
    assert not_writable(schema.json(), {}, ()) == "the table names no statistics columns"
    assert not_writable(schema.json(), stats, ("key",)) == "the table is partitioned"
    assert not_writable(schema.json(), {**stats, "delta.columnMapping.mode": "name"}, ()) == \
        "the table maps column names"
    assert not_writable(schema.json(), {**stats, "delta.constraints.positive": "key.id > 0"}, ()) == \
        "the table has CHECK constraints"
    generated = json.loads(schema.json())
    generated["fields"][1]["type"]["fields"][0]["metadata"] = {"delta.generationExpression": "1"}
    assert not_writable(json.dumps(generated), stats, ()) == "column key.id is generated, an identity or checked"
    void = raw_row_schema(KEY_TYPE, T.StructType([T.StructField("nothing", T.NullType())]))
    assert not_writable(void.json(), stats, ()) == "a column has no type (void)"


def test_a_date_spark_avro_would_refuse_or_rebase_is_left_to_spark():
    rows = ArrowRows(Writers(_1=(KEY, KEY_TYPE), _2=(VALUE, VALUE_TYPE)))
    for early in ({"day": dt.date(1582, 10, 14)}, {"at": dt.datetime(1899, 12, 31, 23, 59, 59, tzinfo=UTC)}):
        with pytest.raises(NotDecodable, match="Gregorian"):
            rows.rows([_message(0, {"id": 1}, {**ROW, **early})], raw_row_schema(KEY_TYPE, VALUE_TYPE))
