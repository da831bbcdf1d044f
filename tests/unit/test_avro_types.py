"""Avro -> Spark types as spark-avro maps them, and fastavro datums -> Spark values.

Each case: the Avro schema, the Spark type it must get (the types zync's own
mapping gave before it asked spark-avro, so the raw tables' columns stay as they
were), a datum as fastavro decodes it (Registry.decode(record_names=True)) and
the Python value Spark takes for it. `spark_type` asks spark-avro in the test
session's Spark.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import uuid

import fastavro
import pytest
from pyspark.sql import types as T

from testkit.avro_values import value_converter
from zync.avro_types import AvroTypeError, connect_names, field_defaults, field_paths, spark_type

UTC = dt.timezone.utc


def roundtrip(schema, datum):
    """The datum as fastavro reads it back (what value_converter is given)."""
    parsed = fastavro.parse_schema(schema)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, datum)
    return fastavro.schemaless_reader(io.BytesIO(out.getvalue()), parsed, None,
                                      return_record_name=True, return_record_name_override=True)


@pytest.fixture(autouse=True)
def _spark_avro(spark):
    """spark_type asks spark-avro, in the session's Spark."""


def converted(schema, datum):
    return value_converter(schema)(roundtrip(schema, datum))


@pytest.mark.parametrize("avro, expected, datum, value", [
    ("boolean", T.BooleanType(), True, True),
    ("int", T.IntegerType(), -7, -7),
    ("long", T.LongType(), 2**40, 2**40),
    ("float", T.FloatType(), 1.5, 1.5),
    ("double", T.DoubleType(), 2.25, 2.25),
    ("string", T.StringType(), "héllo", "héllo"),
    ("bytes", T.BinaryType(), b"\x00\xff", b"\x00\xff"),
], ids=lambda x: str(x)[:20])
def test_primitives(avro, expected, datum, value):
    assert spark_type(avro) == expected
    assert converted(avro, datum) == value


def test_null_alone_is_nulltype():
    assert spark_type("null") == T.NullType()
    assert converted("null", None) is None


def test_record_fields_are_nullable_only_when_the_avro_field_is_optional():
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": ["null", "string"], "default": None}]}
    assert spark_type(schema) == T.StructType([T.StructField("a", T.IntegerType(), False),
                                               T.StructField("b", T.StringType(), True)])
    assert converted(schema, {"a": 1, "b": None}) == (1, None)
    assert converted(schema, {"a": 2, "b": "x"}) == (2, "x")


def test_nested_records_and_named_type_references():
    schema = {"type": "record", "name": "Outer", "namespace": "ns", "fields": [
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "long"}]}},
        {"name": "again", "type": "Inner"},
        {"name": "qualified", "type": "ns.Inner"}]}
    inner = T.StructType([T.StructField("x", T.LongType(), False)])
    assert spark_type(schema) == T.StructType([T.StructField(n, inner, False)
                                               for n in ("inner", "again", "qualified")])
    assert converted(schema, {"inner": {"x": 1}, "again": {"x": 2}, "qualified": {"x": 3}}) == ((1,), (2,), (3,))


def _from_avro_type(spark, schema) -> T.DataType:
    """The type of a `from_avro` column over `schema`, as Spark's analyzer gives it."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    column = from_avro(F.lit(None).cast("binary"), json.dumps(schema)).alias("t")
    return spark.range(0).select(column).schema["t"].dataType


def test_every_type_is_the_one_from_avro_decodes_to(spark):
    """spark_type asks spark-avro's converter directly: the same type `from_avro` decodes to, for every
    Avro type, Debezium's envelope, unions of several types and a default its field's type refuses."""
    from tests.ingest.schemas import ROW_V1, envelope
    from tests.ingest.test_all_types import SCHEMA as ALL_TYPES

    odd_default = {"type": "record", "name": "Odd", "fields": [{"name": "n", "type": "int", "default": "text"}]}
    unions = {"type": "record", "name": "U", "fields": [
        {"name": "u", "type": ["null", "int", "string", {"type": "record", "name": "M", "fields": [
            {"name": "x", "type": "double"}]}]}]}
    for schema in (ALL_TYPES, envelope(ROW_V1), odd_default, unions, "string", {"type": "map", "values": "long"}):
        assert spark_type(schema, spark) == _from_avro_type(spark, schema), schema


def test_recursive_records_are_refused_like_spark_avro():
    schema = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    with pytest.raises(AvroTypeError, match="recursive"):
        spark_type(schema)


def test_arrays_contain_null_only_when_the_items_are_optional():
    assert spark_type({"type": "array", "items": "int"}) == T.ArrayType(T.IntegerType(), False)
    schema = {"type": "array", "items": ["null", "string"]}
    assert spark_type(schema) == T.ArrayType(T.StringType(), True)
    assert converted(schema, ["a", None]) == ["a", None]


def test_arrays_of_records():
    schema = {"type": "array", "items": {"type": "record", "name": "I", "fields": [{"name": "q", "type": "int"}]}}
    assert spark_type(schema) == T.ArrayType(T.StructType([T.StructField("q", T.IntegerType(), False)]), False)
    assert converted(schema, [{"q": 1}, {"q": 2}]) == [(1,), (2,)]


def test_maps_have_string_keys():
    schema = {"type": "map", "values": "long"}
    assert spark_type(schema) == T.MapType(T.StringType(), T.LongType(), False)
    assert converted(schema, {"a": 1}) == {"a": 1}
    schema = {"type": "map", "values": ["null", {"type": "record", "name": "V", "fields": [
        {"name": "v", "type": "string"}]}]}
    assert spark_type(schema) == T.MapType(T.StringType(), T.StructType([T.StructField("v", T.StringType(), False)]),
                                           True)
    assert converted(schema, {"k": {"v": "x"}, "n": None}) == {"k": ("x",), "n": None}


def test_enums_are_strings():
    schema = {"type": "enum", "name": "Op", "symbols": ["c", "u", "d"]}
    assert spark_type(schema) == T.StringType()
    assert converted(schema, "u") == "u"


def test_fixed_is_binary():
    schema = {"type": "fixed", "name": "Hash", "size": 4}
    assert spark_type(schema) == T.BinaryType()
    assert converted(schema, b"\x01\x02\x03\x04") == b"\x01\x02\x03\x04"


def test_nullable_union_is_its_one_type():
    assert spark_type(["null", "long"]) == T.LongType()
    assert spark_type(["long", "null"]) == T.LongType()
    assert converted(["null", "long"], None) is None
    assert converted(["null", "long"], 5) == 5


def test_int_long_and_float_double_unions_widen():
    assert spark_type(["int", "long"]) == T.LongType()
    assert spark_type(["null", "float", "double"]) == T.DoubleType()
    assert converted(["int", "long"], 3) == 3


def test_multi_type_unions_are_member_structs():
    schema = ["null", "string", "long", {"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]},
              {"type": "record", "name": "B", "fields": [{"name": "b", "type": "string"}]}]
    a = T.StructType([T.StructField("a", T.IntegerType(), False)])
    b = T.StructType([T.StructField("b", T.StringType(), False)])
    assert spark_type(schema) == T.StructType([
        T.StructField("member0", T.StringType(), True), T.StructField("member1", T.LongType(), True),
        T.StructField("member2", a, True), T.StructField("member3", b, True)])
    assert converted(schema, "s") == ("s", None, None, None)
    assert converted(schema, 9) == (None, 9, None, None)
    assert converted(schema, ("A", {"a": 1})) == (None, None, (1,), None)
    assert converted(schema, ("B", {"b": "x"})) == (None, None, None, ("x",))
    assert converted(schema, None) is None


def test_union_of_one_record_and_other_types():
    schema = ["string", {"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]}]
    assert converted(schema, {"a": 4}) == (None, (4,))
    assert converted(schema, "x") == ("x", None)


def test_decimals_bytes_and_fixed():
    as_bytes = {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}
    as_fixed = {"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 4}
    assert spark_type(as_bytes) == T.DecimalType(10, 2)
    assert spark_type(as_fixed) == T.DecimalType(18, 4)
    assert converted(as_bytes, decimal.Decimal("12.34")) == decimal.Decimal("12.34")
    assert converted(as_fixed, decimal.Decimal("-1.0001")) == decimal.Decimal("-1.0001")


def test_date():
    schema = {"type": "int", "logicalType": "date"}
    assert spark_type(schema) == T.DateType()
    assert converted(schema, dt.date(2024, 2, 29)) == dt.date(2024, 2, 29)


@pytest.mark.parametrize("logical", ["timestamp-millis", "timestamp-micros"])
def test_timestamps_are_instants(logical):
    schema = {"type": "long", "logicalType": logical}
    assert spark_type(schema) == T.TimestampType()
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    assert converted(schema, when) == when


@pytest.mark.parametrize("logical", ["local-timestamp-millis", "local-timestamp-micros"])
def test_local_timestamps_are_timestamp_ntz(logical):
    schema = {"type": "long", "logicalType": logical}
    assert spark_type(schema) == T.TimestampNTZType()
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123000)
    assert converted(schema, when) == when


def test_uuid_is_a_string():
    schema = {"type": "string", "logicalType": "uuid"}
    assert spark_type(schema) == T.StringType()
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert converted(schema, str(u)) == "12345678-1234-5678-1234-567812345678"


def test_time_millis_and_micros_stay_numbers_like_spark_avro():
    millis = {"type": "int", "logicalType": "time-millis"}
    micros = {"type": "long", "logicalType": "time-micros"}
    assert spark_type(millis) == T.IntegerType()
    assert spark_type(micros) == T.LongType()
    assert converted(millis, dt.time(1, 2, 3, 4000)) == 3_723_004
    assert converted(micros, dt.time(1, 2, 3, 5)) == 3_723_000_005


def test_debezium_value_shape():
    row = {"type": "record", "name": "Value", "fields": [{"name": "id", "type": "int"},
                                                         {"name": "email", "type": ["null", "string"]}]}
    schema = {"type": "record", "name": "Envelope", "fields": [
        {"name": "before", "type": ["null", row], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": {"type": "record", "name": "Source", "fields": [
            {"name": "connector", "type": "string"}, {"name": "ts_ms", "type": "long"},
            {"name": "snapshot", "type": [{"type": "enum", "name": "Snap", "symbols": ["true", "last", "false"]},
                                          "null"], "default": "false"}]}},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None}]}
    value = T.StructType([T.StructField("id", T.IntegerType(), False), T.StructField("email", T.StringType(), True)])
    assert spark_type(schema) == T.StructType([
        T.StructField("before", value, True), T.StructField("after", value, True),
        T.StructField("source", T.StructType([
            T.StructField("connector", T.StringType(), False), T.StructField("ts_ms", T.LongType(), False),
            T.StructField("snapshot", T.StringType(), True)]), False),
        T.StructField("op", T.StringType(), False), T.StructField("ts_ms", T.LongType(), True)])
    datum = {"before": None, "after": {"id": 1, "email": "a@b"},
             "source": {"connector": "mysql", "ts_ms": 5, "snapshot": "false"}, "op": "c", "ts_ms": 6}
    assert converted(schema, datum) == (None, (1, "a@b"), ("mysql", 5, "false"), "c", 6)


# Debezium's envelope after `ALTER TABLE items ADD COLUMN qty integer NOT NULL DEFAULT 0` and
# `ADD COLUMN status text DEFAULT 'new'` (as its Avro converter registers it, trimmed).
DEBEZIUM_VALUE = {"type": "record", "name": "Envelope", "namespace": "dbze.public.items", "fields": [
    {"name": "before", "type": ["null", {"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "int"},
        {"name": "due", "type": ["null", {"type": "int", "connect.name": "io.debezium.time.Date"}], "default": None},
        {"name": "qty", "type": {"type": "int", "connect.default": 0}, "default": 0},
        {"name": "status", "type": [{"type": "string", "connect.default": "new"}, "null"], "default": "new"},
        {"name": "born", "type": {"type": "int", "logicalType": "date"}, "default": 0},
        {"name": "blob", "type": "bytes", "default": "\u00ff"},
    ]}], "default": None},
    {"name": "after", "type": ["null", "Value"], "default": None},
    {"name": "op", "type": "string"},
]}


def test_field_paths_follow_named_types_and_unions():
    paths = field_paths(DEBEZIUM_VALUE)
    assert {"before", "after", "op", "after.qty", "before.qty", "after.status"} <= paths
    assert "after.missing" not in paths and "" not in paths


def test_field_defaults_are_the_plain_non_null_ones():
    # A logical type's default is in its underlying encoding and bytes defaults are code points:
    # neither is what the raw table's column holds, so neither is noted.
    assert field_defaults(DEBEZIUM_VALUE) == {"before.qty": 0, "before.status": "new", "after.qty": 0, "after.status": "new"}


def test_connect_names_reach_fields_through_unions():
    assert connect_names(DEBEZIUM_VALUE) == {"before.due": "io.debezium.time.Date", "after.due": "io.debezium.time.Date"}


def test_decimals_wider_than_spark_are_narrowed_to_38_digits_at_their_scale():
    from zync.avro_types import within_spark_decimals

    money = {"type": "bytes", "logicalType": "decimal", "precision": 64, "scale": 2}
    schema = {"type": "record", "name": "Value", "fields": [
        {"name": "price", "type": ["null", money]},
        {"name": "amounts", "type": {"type": "array", "items": money}},
        {"name": "narrow", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    ]}
    narrowed = within_spark_decimals(schema)
    assert narrowed["fields"][0]["type"][1] == {**money, "precision": 38}
    assert narrowed["fields"][1]["type"]["items"]["precision"] == 38
    assert narrowed["fields"][2]["type"]["precision"] == 10
    assert schema["fields"][0]["type"][1]["precision"] == 64  # the registry's schema is left as it is
