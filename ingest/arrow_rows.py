"""A batch's messages decoded in Python (fastavro) into Arrow rows of the raw table's own types.

Why: `zync run` appends a few records to every changed table every cycle, and
through Spark each such append is a plan's analysis, code generation and a
one-task job before Delta's commit, ~0.3 s a table on two cores
(bench/ingest_cycle.py): a minute a cycle for a database of 200 tables. Decoded
here, the rows go to a Parquet file written in Python, and the JVM only commits
it (ingest/delta_append.py, with every check an ingest commit has).

Only where the rows are exactly those spark-avro's `from_avro` and the raw
table's types give; `rows` answers None otherwise and the batch goes through
Spark as before, which also finds and reports what cannot be taken:
- a writer schema this module decodes as spark-avro does (`decodable`):
  records, primitives, enums, fixed, arrays, maps, unions of null and one
  type, logical types spark-avro maps (date, timestamp-*, local-timestamp-*,
  decimal) and those it keeps as their base values (time-*, uuid); not a union
  of several types (fastavro cannot tell an int from a long in one);
- every writer fits the table's columns as they are: no evolution in this batch;
- every value converts exactly: pyarrow refuses a decimal that does not fit its
  precision, an integer out of range, and fastavro a date Python cannot hold or a
  string that is not UTF-8;
- the table's NOT NULL fields all hold values (Delta's write would check them).
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from ingest.data_file import NotDecodable
from ingest.decode import Message
from ingest.evolution import PROMOTIONS
from ingest.schemas import WriterSchemas
from zync.envelope import kafka_struct
from zync.wire import HEADER

# Logical types fastavro turns into the Python values pyarrow takes for spark-avro's type.
CONVERTED = {("int", "date"), ("long", "timestamp-millis"), ("long", "timestamp-micros"),
             ("long", "local-timestamp-millis"), ("long", "local-timestamp-micros"),
             ("bytes", "decimal"), ("fixed", "decimal")}
PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
RAW_COLUMNS = ("kafka", "key", "value")
GREGORIAN_START = dt.date(1582, 10, 15)
EARLIEST_TIMESTAMP_MICROS = -2_208_988_800_000_000  # 1900-01-01T00:00:00Z


def base_schema(schema: Any, named: set[str] | None = None, namespace: str | None = None) -> Any:
    """The writer schema as fastavro must read it to give spark-avro's values: logical types
    spark-avro keeps as their base values (time-*, uuid, and any it does not know) removed.

    NotDecodable for what Spark and fastavro may read apart (a union of several types).
    Decoding is unchanged: a logical type never changes the bytes, only what they are read as.
    """
    named = set() if named is None else named
    if isinstance(schema, str):
        if schema not in PRIMITIVES and schema not in named and f"{namespace}.{schema}" not in named:
            raise NotDecodable(f"named type {schema!r} is not defined before its use")
        return schema
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) != 1:
            raise NotDecodable("a union of several types")
        return [base_schema(b, named, namespace) if b != "null" else b for b in schema]
    if not isinstance(schema, dict):
        raise NotDecodable(f"not an Avro schema: {schema!r}")
    kind = schema.get("type")
    out = dict(schema)
    logical = out.pop("logicalType", None)
    if logical is not None and (kind, logical) in CONVERTED:
        out["logicalType"] = logical
    if kind in ("record", "error", "enum", "fixed"):
        name, space = schema["name"], schema.get("namespace", namespace)
        full = name if "." in name or not space else f"{space}.{name}"
        named.update({name, full})
        if kind in ("record", "error"):
            inner = full.rpartition(".")[0] or None
            out["fields"] = [{**f, "type": base_schema(f["type"], named, inner)} for f in schema["fields"]]
        return out
    if kind == "array":
        out["items"] = base_schema(schema["items"], named, namespace)
    elif kind == "map":
        out["values"] = base_schema(schema["values"], named, namespace)
    elif isinstance(kind, (dict, list)):
        return base_schema(kind, named, namespace)
    elif kind not in PRIMITIVES:
        raise NotDecodable(f"Avro type {kind!r}")
    return out


def _fits(table_type: T.DataType, writer_type: T.DataType) -> bool:
    """Whether the table's column holds the writer's values as they are: every writer field is in the table
    (a table field the writer lacks reads null), and each type is the writer's or one Avro promotes it to
    (int -> long, ...; a decimal of the same scale and more digits). Nullability is checked on the values."""
    if isinstance(table_type, T.StructType) and isinstance(writer_type, T.StructType):
        fields = {f.name: f.dataType for f in table_type.fields}
        return all(f.name in fields and _fits(fields[f.name], f.dataType) for f in writer_type.fields)
    if isinstance(table_type, T.ArrayType) and isinstance(writer_type, T.ArrayType):
        return _fits(table_type.elementType, writer_type.elementType)
    if isinstance(table_type, T.MapType) and isinstance(writer_type, T.MapType):
        return _fits(table_type.keyType, writer_type.keyType) and _fits(table_type.valueType, writer_type.valueType)
    if isinstance(table_type, T.DecimalType) and isinstance(writer_type, T.DecimalType):
        return table_type.scale == writer_type.scale and table_type.precision >= writer_type.precision
    if type(table_type) is type(writer_type) and not isinstance(table_type, (T.StructType, T.ArrayType, T.MapType)):
        return True
    return isinstance(table_type, PROMOTIONS.get(type(writer_type), ()))


def _null_in_required(array: pa.Array, spark_type: T.DataType) -> bool:
    """Whether a NOT NULL field inside `array` holds a null where its parents hold values.

    pyarrow's flatten() gives a struct's fields with the struct's own nulls merged in, so a
    field holds a null of its own exactly when it has more nulls than its struct.
    """
    if isinstance(spark_type, T.StructType):
        for child, field in zip(array.flatten(), spark_type.fields):
            if (not field.nullable and child.null_count > array.null_count) or _null_in_required(child, field.dataType):
                return True
        return False
    if isinstance(spark_type, T.ArrayType):
        values = array.flatten()  # the elements of the lists that are there
        return (not spark_type.containsNull and values.null_count > 0) or _null_in_required(values, spark_type.elementType)
    if isinstance(spark_type, T.MapType):
        values = array.items
        return (not spark_type.valueContainsNull and values.null_count > 0) or _null_in_required(values, spark_type.valueType)
    return False


def _before_calendar_switch(array: pa.Array, spark_type: T.DataType) -> bool:
    """Whether a date or timestamp inside `array` is one spark-avro may refuse or rebase: before 1582-10-15
    (dates) or 1900-01-01 UTC (timestamps, where Spark's rebasing also depends on time zones). Such a batch
    is Spark's, so it fails or passes exactly as it always has."""
    if isinstance(spark_type, T.StructType):
        return any(_before_calendar_switch(child, field.dataType)
                   for child, field in zip(array.flatten(), spark_type.fields))
    if isinstance(spark_type, T.ArrayType):
        return _before_calendar_switch(array.flatten(), spark_type.elementType)
    if isinstance(spark_type, T.MapType):
        return _before_calendar_switch(array.items, spark_type.valueType)
    if isinstance(spark_type, T.DateType):
        earliest = pc.min(array).as_py()
        return earliest is not None and earliest < GREGORIAN_START
    if isinstance(spark_type, (T.TimestampType, T.TimestampNTZType)):
        earliest = pc.min(pc.cast(array, pa.int64())).as_py()
        return earliest is not None and earliest < EARLIEST_TIMESTAMP_MICROS
    return False


class ArrowRows:
    """Decodes batches of one topic into the raw table's rows, its writer schemas read once each."""

    def __init__(self, schemas: WriterSchemas):
        self.schemas = schemas
        self._parsed: dict[int, Any] = {}  # schema id -> fastavro's parsed base schema
        self._refused: dict[int, str] = {}  # schema id -> why it is not decodable here

    def _reader(self, schema_id: int) -> Any:
        if schema_id in self._refused:
            raise NotDecodable(self._refused[schema_id])
        parsed = self._parsed.get(schema_id)
        if parsed is None:
            try:
                parsed = fastavro.parse_schema(base_schema(self.schemas.avro(schema_id)))
            except NotDecodable as e:
                self._refused[schema_id] = str(e)
                raise
            self._parsed[schema_id] = parsed
        return parsed

    def rows(self, messages: Sequence[Message], table_schema: T.StructType) -> pa.Table:
        """The batch as a pyarrow Table of `table_schema` (kafka, key, value); NotDecodable if it is not
        exactly what Spark would write."""
        # Delta keeps a table created from a DataFrame all nullable: the types are compared, not the nullability.
        if (tuple(table_schema.names) != RAW_COLUMNS
                or table_schema["kafka"].dataType.simpleString() != kafka_struct().simpleString()):
            raise NotDecodable("the table has columns other than kafka, key, value")
        columns = []
        for part in ("key", "value"):
            column_type = table_schema[part].dataType
            ids = {getattr(m, f"{part}_schema_id") for m in messages} - {None}
            for schema_id in sorted(ids):
                if not _fits(column_type, self.schemas.spark_type(schema_id)):
                    raise NotDecodable(f"writer schema {schema_id} needs the {part} column evolved")
            columns.append(self._column(messages, part, column_type))
        arrow_schema = pa.schema([pa.field(f.name, to_arrow_type(f.dataType), nullable=f.nullable)
                                  for f in table_schema.fields])
        rows = pa.Table.from_arrays([kafka_array(messages, arrow_schema.field("kafka").type), *columns], schema=arrow_schema)
        for column, field in zip(rows.columns, table_schema.fields):
            for chunk in column.chunks:
                if (not field.nullable and chunk.null_count) or _null_in_required(chunk, field.dataType):
                    raise NotDecodable(f"a NOT NULL field of column {field.name} holds a null")
                if _before_calendar_switch(chunk, field.dataType):
                    raise NotDecodable(f"column {field.name} holds a date or time before the Gregorian calendar's "
                                       "start, which Spark's Avro reader refuses (spark.sql.avro.datetimeRebaseModeInRead)")
        return rows

    def _column(self, messages: Sequence[Message], part: str, column_type: T.DataType) -> pa.Array:
        datums: list[Any] = []
        for m in messages:
            schema_id, data = getattr(m, f"{part}_schema_id"), getattr(m, part)
            if schema_id is None or data is None:
                datums.append(None)
                continue
            try:
                datums.append(fastavro.schemaless_reader(io.BytesIO(data[HEADER.size:]), self._reader(schema_id), None))
            except NotDecodable:
                raise
            except Exception as e:  # noqa: BLE001 - fastavro raises many kinds; Spark's path reports it
                raise NotDecodable(f"{m.where} {part}: {e}") from None
        try:
            return pa.array(datums, type=to_arrow_type(column_type))
        except (pa.ArrowException, OverflowError, TypeError, ValueError) as e:
            raise NotDecodable(f"a {part} value does not convert to {column_type.simpleString()}: {e}") from None


def kafka_array(messages: Sequence[Message], arrow_type: pa.StructType) -> pa.StructArray:
    """The `kafka` column as both readers write it (zync.envelope.kafka_struct), of the table's Arrow type:
    no timestamp for one <= 0."""
    values = {
        "topic": [m.topic for m in messages],
        "partition": [m.partition for m in messages],
        "offset": [m.offset for m in messages],
        "timestamp": [m.timestamp_ms * 1000 if m.timestamp_ms and m.timestamp_ms > 0 else None for m in messages],
        "key_schema_id": [m.key_schema_id for m in messages],
        "value_schema_id": [m.value_schema_id for m in messages],
    }
    fields = list(arrow_type)
    return pa.StructArray.from_arrays([pa.array(values[f.name], f.type) for f in fields], fields=fields)
