"""Avro schemas <-> Spark SQL types, and what spark-avro does not keep.

- Avro -> Spark: spark-avro's own mapping (`spark_type` asks it), as `from_avro` decodes;
- what spark-avro drops and zync keeps beside a raw table: Kafka Connect's schema names
  (`connect_names`) and the defaults of fields some writers lack (`field_defaults`);
- Spark -> Avro for egress (`avro_schema_for_struct`): every field optional, Debezium's
  name for microsecond timestamps.

Ingest decodes in the JVM, so fastavro datums as Spark values are only the tests' concern
(testkit/avro_values.py).
"""

from __future__ import annotations

import json
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from zync.spark_internals import context_running, java_class, java_exception


class AvroTypeError(ValueError):
    """An Avro schema (or Spark type) with no counterpart on the other side."""


_PRIMITIVE_NAMES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def _full_name(schema: dict, namespace: str | None) -> str:
    name = schema["name"]
    ns = schema.get("namespace", namespace)
    return name if "." in name or not ns else f"{ns}.{name}"


class _Resolver:
    """Walks a schema, remembering named types so later references resolve."""

    def __init__(self) -> None:
        self.named: dict[str, Any] = {}
        self.in_progress: set[str] = set()

    def resolve(self, schema: Any, namespace: str | None) -> tuple[Any, str | None]:
        if isinstance(schema, str) and schema not in _PRIMITIVE_NAMES:
            for candidate in (schema, f"{namespace}.{schema}" if namespace else schema):
                if candidate in self.in_progress:
                    raise AvroTypeError(f"recursive Avro type {schema!r}: Spark has no recursive types")
                if candidate in self.named:
                    found = self.named[candidate]
                    return found, found.get("namespace", namespace) if isinstance(found, dict) else namespace
            raise AvroTypeError(f"unknown Avro type {schema!r}")
        return schema, namespace


def _branches(schema: list) -> tuple[list, bool]:
    non_null = [b for b in schema if b != "null"]
    return non_null, len(non_null) != len(schema)


SPARK_MAX_PRECISION = 38


def within_spark_decimals(avro_schema: Any) -> Any:
    """The schema with every decimal wider than Spark's 38 digits narrowed to 38, at its own scale.

    Kafka Connect's Avro converters write precision 64 for a Connect decimal that names none
    (Debezium's PostgreSQL `money`, for one), and PostgreSQL allows numeric(1000, s): spark-avro
    refuses such a schema whole, so the table could take none of its records. Precision is not
    part of Avro's encoding (the bytes hold the unscaled number, the schema the scale), so every
    value of at most 38 digits decodes as written; a wider one fails its batch and stops ingest
    at that message (nothing is rounded), as any message that does not decode does.
    """
    if isinstance(avro_schema, list):
        return [within_spark_decimals(branch) for branch in avro_schema]
    if not isinstance(avro_schema, dict):
        return avro_schema
    narrowed = {key: within_spark_decimals(value) if key in ("type", "items", "values") else value
                for key, value in avro_schema.items()}
    if "fields" in avro_schema:
        narrowed["fields"] = [{**f, "type": within_spark_decimals(f["type"])} for f in avro_schema["fields"]]
    if (avro_schema.get("logicalType") == "decimal" and isinstance(avro_schema.get("precision"), int)
            and avro_schema["precision"] > SPARK_MAX_PRECISION and avro_schema.get("scale", 0) <= SPARK_MAX_PRECISION):
        narrowed["precision"] = SPARK_MAX_PRECISION
    return narrowed


def spark_type(avro_schema: Any, spark: SparkSession | None = None) -> T.DataType:
    """The Spark type spark-avro gives an Avro schema: the type `from_avro` decodes it to.

    Asked of spark-avro itself, as `from_avro` asks it (the schema parsed without validating its
    defaults, converted with no options), in the given or active session, so the raw tables' columns
    are what the decoder writes by construction. Called directly rather than through the query plan
    of a `from_avro` column, which asks the same converter.
    """
    # The session of this thread, else the process's (a test's or dbt's, made on another thread).
    spark = spark or SparkSession.getActiveSession() or (
        SparkSession.builder.getOrCreate() if context_running() else None)
    if spark is None:
        raise AvroTypeError("mapping Avro to Spark types needs a running Spark session (spark-avro maps them)")
    try:
        parsed = java_class(spark, "org.apache.avro.Schema$Parser")().setValidateDefaults(False).parse(
            json.dumps(avro_schema))
        converted = java_class(spark, "org.apache.spark.sql.avro.SchemaConverters").toSqlType(
            parsed, java_class(spark, "org.apache.spark.api.python.PythonUtils").toScalaMap({}))
        return T._parse_datatype_json_string(converted.dataType().json())
    except (Py4JJavaError, PySparkException) as e:
        # spark-avro's IncompatibleSchemaException (a recursive type, say) reaches Python as a Java error.
        cause = java_exception(e)
        while cause is not None and cause.getCause() is not None:
            cause = cause.getCause()
        text = (str(cause.getMessage() or "") if cause is not None else str(e)).strip() or type(e).__name__
        raise AvroTypeError(f"spark-avro cannot map Avro schema {json.dumps(avro_schema)[:200]}: "
                            f"{text.splitlines()[0]}") from None


# --- Spark -> Avro, for egress --------------------------------------------------

MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"

def _avro(t: T.DataType, name: str, namespace: str | None) -> Any:
    if isinstance(t, T.StructType):
        return {"type": "record", "name": name, **({"namespace": namespace} if namespace else {}),
                "fields": [{"name": f.name, "type": _nullable(_avro(f.dataType, f"{name}_{f.name}", None)),
                            "default": None} for f in t.fields]}
    if isinstance(t, T.ArrayType):
        return {"type": "array", "items": _nullable(_avro(t.elementType, f"{name}_item", None))}
    if isinstance(t, T.MapType):
        if not isinstance(t.keyType, T.StringType):
            raise AvroTypeError(f"Avro maps have string keys; {name} has {t.keyType.simpleString()} keys")
        return {"type": "map", "values": _nullable(_avro(t.valueType, f"{name}_value", None))}
    if isinstance(t, T.DecimalType):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if isinstance(t, T.DateType):
        return {"type": "int", "logicalType": "date"}
    # Kafka Connect has no microsecond timestamp, and Avro converters (Apicurio's 2.6 among them)
    # turn timestamp-micros into a bare int64, which a JDBC sink stores as bigint. Debezium's own
    # name for microseconds since the epoch, as Connect's schema name, makes Debezium's JDBC sink
    # create a timestamp column; the encoding stays the standard timestamp-micros.
    if isinstance(t, T.TimestampNTZType):
        return {"type": "long", "logicalType": "local-timestamp-micros", "connect.name": MICRO_TIMESTAMP}
    if isinstance(t, T.TimestampType):
        return {"type": "long", "logicalType": "timestamp-micros", "connect.name": MICRO_TIMESTAMP}
    simple = {T.BooleanType: "boolean", T.ByteType: "int", T.ShortType: "int", T.IntegerType: "int",
              T.LongType: "long", T.FloatType: "float", T.DoubleType: "double", T.StringType: "string",
              T.BinaryType: "bytes", T.NullType: "null"}
    for spark_class, avro_name in simple.items():
        if isinstance(t, spark_class):
            return avro_name
    raise AvroTypeError(f"no Avro type for Spark type {t.simpleString()} (field {name})")


def _nullable(schema: Any) -> Any:
    return schema if schema == "null" else ["null", schema]


def spark_to_avro(t: T.DataType, name: str, namespace: str | None = None) -> Any:
    """The Avro schema for a Spark type (records get every field optional, default null)."""
    return _avro(t, name, namespace)


def avro_schema_for_struct(struct: T.StructType, name: str, namespace: str | None = None,
                           only_fields: list[str] | None = None) -> dict:
    """A record schema for a Spark struct; every field optional (default null) so successive
    shapes of one subject stay compatible; only_fields keeps just those top-level fields."""
    if only_fields is not None:
        unknown = set(only_fields) - set(struct.names)
        if unknown:
            raise AvroTypeError(f"fields {sorted(unknown)} are not in {name}'s columns {struct.names}")
        struct = T.StructType([f for f in struct.fields if f.name in only_fields])
    return _avro(struct, name, namespace)


def _walk(avro_schema: Any, visit) -> None:
    """Call visit(path, schema, field) for the root (path "", field None) and every record field
    below it (its dotted path, its type resolved, the field's own definition). Named types are
    followed where they are used; a union is followed through its one non-null branch, as
    spark_type reads it (several branches end the walk there)."""
    r = _Resolver()

    def walk(schema: Any, ns: str | None, path: str, field: dict | None) -> None:
        schema, ns = r.resolve(schema, ns)
        if isinstance(schema, list):
            branches, _ = _branches(schema)
            if len(branches) == 1:
                walk(branches[0], ns, path, field)
            return
        visit(path, schema, field)
        if not isinstance(schema, dict):
            return
        kind = schema.get("type")
        if kind in ("record", "error"):
            full = _full_name(schema, ns)
            if full in r.in_progress:
                return
            r.in_progress.add(full)
            inner_ns = full.rpartition(".")[0] or None
            for f in schema["fields"]:
                walk(f["type"], inner_ns, f"{path}.{f['name']}" if path else f["name"], f)
            r.in_progress.discard(full)
            r.named[full] = schema
        elif kind in ("enum", "fixed"):
            r.named[_full_name(schema, ns)] = schema
        elif isinstance(kind, (list, dict)):
            walk(kind, ns, path, field)

    walk(avro_schema, None, "", None)


def connect_names(avro_schema: Any) -> dict[str, str]:
    """{dotted field path: Kafka Connect schema name} of every field whose type carries a `connect.name`.

    Debezium's semantic types (`io.debezium.time.Date` on an int, `...ZonedTimestamp` on a string,
    `io.debezium.data.VariableScaleDecimal` on a record) reach Avro only as this property, which
    spark-avro drops; ingest keeps them beside the raw table (ingest/table.py) so that mirrors and
    transforms can read the values as the types they stand for (macros/debezium/). The root itself
    is the path "" (a key that is a bare semantic type).
    """
    found: dict[str, str] = {}

    def visit(path: str, schema: Any, _field: dict | None) -> None:
        if isinstance(schema, dict) and isinstance(schema.get("connect.name"), str):
            found[path] = schema["connect.name"]

    _walk(avro_schema, visit)
    return found


_DEFAULTABLE = {"boolean", "int", "long", "float", "double", "string", "enum"}


def field_paths(avro_schema: Any) -> set[str]:
    """The dotted paths of every record field a schema has (through records, as _walk reads them)."""
    found: set[str] = set()
    _walk(avro_schema, lambda path, _schema, field: found.add(path) if field is not None else None)
    return found


def field_defaults(avro_schema: Any) -> dict[str, Any]:
    """{dotted field path: default} of every field whose schema gives it a non-null default of a
    plain type (boolean, number, string, enum symbol; not bytes, logical types or containers).

    A record written before such a field existed reads, in Avro's schema resolution, as holding
    the default: `ALTER TABLE ... ADD COLUMN qty int NOT NULL DEFAULT 0` gives Debezium's schema
    `qty` with default 0, and PostgreSQL's older rows hold 0. The raw table holds null for those
    records (it keeps what was written); mirrors and transforms put the default in for them
    (macros/debezium/zync_with_default.sql).
    """
    found: dict[str, Any] = {}

    def visit(path: str, schema: Any, field: dict | None) -> None:
        if field is None or field.get("default") is None:
            return
        kind = schema if isinstance(schema, str) else schema.get("type")
        if kind in _DEFAULTABLE and not (isinstance(schema, dict) and "logicalType" in schema):
            found[path] = field["default"]

    _walk(avro_schema, visit)
    return found
