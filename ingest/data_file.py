"""A raw table's data file written in Python: its Parquet file as Spark's write would encode it, and the
`add` action that names it, with Delta's statistics.

The rows come from ingest/arrow_rows.py and the commit is the JVM's (ingest/delta_append.py).

Statistics are what data skipping, `COUNT(*)` and `MIN`/`MAX` answered from the log and
`zync run`'s freshness read, so every one written is exact:
- numRecords;
- min, max and null count of the table's statistics columns' integer and
  timestamp leaves (a timestamp only when all its values are whole milliseconds, as
  Kafka's are: Delta's statistics keep milliseconds).
Other leaves get none: Delta truncates strings by rules of its own, NaN orders
apart, and the text of a date's or a local timestamp's statistic is not checked
against Delta's here. A column without statistics is one data skipping does not
use: a reader reads more, never less.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import types as T

from zync import storage

# Spark reads a Parquet file's dates and timestamps with no rebasing (the proleptic Gregorian calendar,
# pyarrow's too) when the file says a Spark 3 wrote it; without this key it follows
# spark.sql.parquet.datetimeRebaseModeInRead, whose default refuses dates before 1582.
SPARK_VERSION_KEY = b"org.apache.spark.version"
# How a raw table's Parquet files are encoded, by this module and by Spark's writes (ingest/table.py
# PARQUET_SETTINGS, which says why).
COMPRESSION = "zstd"
DICTIONARY = False
STATS_COLUMNS_PROPERTY = "delta.dataSkippingStatsColumns"
_INTEGERS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
STRING_PREFIX = 32  # Delta's spark.databricks.delta.stats.skipping.stringPrefixLength default


class NotDecodable(Exception):
    """This batch is not for the Python path: a schema, a value or a type it cannot give exactly as Spark would.

    Raised while a batch's rows are built (ingest/arrow_rows.py); the raw table's append
    (ingest/table.py) then writes nothing and the batch goes to Spark."""

def _stat(value: Any, spark_type: T.DataType) -> Any:
    if isinstance(spark_type, T.TimestampType):  # as Delta writes one: UTC, milliseconds
        return value.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value


def _exact(array: pa.Array, spark_type: T.DataType) -> bool:
    """Whether Delta's statistics hold this leaf's min and max exactly, in a form checked against Delta's own."""
    if isinstance(spark_type, _INTEGERS):
        return True
    if isinstance(spark_type, T.StringType):
        # Delta keeps a string's first STRING_PREFIX characters (and marks a truncated maximum): strings
        # no longer than that are their own statistics, compared as Spark does (UTF-8 bytes).
        longest = pc.max(pc.utf8_length(array)).as_py()
        return longest is None or longest <= STRING_PREFIX
    if isinstance(spark_type, T.TimestampType):
        micros = pc.cast(array, pa.int64())
        return pc.all(pc.equal(pc.multiply(pc.divide(micros, 1000), 1000), micros)).as_py() is not False
    return False


def _leaves(array: pa.Array, spark_type: T.DataType, out: dict[str, dict], path: tuple[str, ...]) -> None:
    """Put each exact leaf's min, max and null count under its path in out's three trees."""
    if isinstance(spark_type, T.StructType):
        for child, field in zip(array.flatten(), spark_type.fields):
            _leaves(child, field.dataType, out, path + (field.name,))
        return
    if not _exact(array, spark_type):
        return
    trees = {"nullCount": array.null_count}
    if array.null_count < len(array):
        low_high = pc.min_max(array)
        trees["minValues"] = _stat(low_high["min"].as_py(), spark_type)
        trees["maxValues"] = _stat(low_high["max"].as_py(), spark_type)
    for tree, value in trees.items():
        node = out[tree]
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = value


def statistics(rows: pa.Table, table_schema: T.StructType, columns: list[str]) -> dict:
    """Delta's statistics of `rows` for the table's statistics columns (dotted paths, as
    delta.dataSkippingStatsColumns names them)."""
    out: dict[str, dict] = {"minValues": {}, "maxValues": {}, "nullCount": {}}
    for column in columns:
        path = tuple(column.split("."))
        array, spark_type = pa.concat_arrays(rows.column(path[0]).chunks), table_schema[path[0]].dataType
        for name in path[1:]:
            if not isinstance(spark_type, T.StructType) or name not in spark_type.names:
                break
            index = spark_type.names.index(name)
            array, spark_type = array.flatten()[index], spark_type.fields[index].dataType
        else:
            _leaves(array, spark_type, out, path)
    return {"numRecords": rows.num_rows, **{k: v for k, v in out.items() if v}}


def _delta_field_metadata(schema: dict) -> str | None:
    """The first field (dotted) whose metadata is Delta's own: a generated or identity column, an
    invariant, a column mapping's physical name. Delta's write fills or checks these; a file
    written here would not."""
    for field in schema.get("fields", ()):
        if any(key.startswith("delta.") for key in field.get("metadata", {})):
            return field["name"]
        kind = field["type"]
        while isinstance(kind, dict) and kind.get("type") in ("array", "map"):
            kind = kind.get("elementType") or kind.get("valueType")
        if isinstance(kind, dict) and kind.get("type") == "struct":
            inner = _delta_field_metadata(kind)
            if inner:
                return f"{field['name']}.{inner}"
    return None


def _has_null_type(spark_type: T.DataType) -> bool:
    if isinstance(spark_type, T.NullType):
        return True
    if isinstance(spark_type, T.StructType):
        return any(_has_null_type(f.dataType) for f in spark_type.fields)
    if isinstance(spark_type, T.ArrayType):
        return _has_null_type(spark_type.elementType)
    if isinstance(spark_type, T.MapType):
        return _has_null_type(spark_type.keyType) or _has_null_type(spark_type.valueType)
    return False


def not_writable(schema_json: str, configuration: dict[str, str], partition_columns: tuple[str, ...]) -> str | None:
    """Why a file written here could differ from what Delta's own write would commit to this table
    (None: it cannot). Only what raw tables never have: a table that has it is written by Spark."""
    if partition_columns:
        return "the table is partitioned"
    if configuration.get("delta.columnMapping.mode", "none") != "none":
        return "the table maps column names"
    if any(key.startswith("delta.constraints.") for key in configuration):
        return "the table has CHECK constraints"
    if STATS_COLUMNS_PROPERTY not in configuration:
        return "the table names no statistics columns"
    schema = json.loads(schema_json)
    field = _delta_field_metadata(schema)
    if field:
        return f"column {field} is generated, an identity or checked"
    if _has_null_type(T.StructType.fromJson(schema)):
        return "a column has no type (void)"
    return None


def stats_columns(configuration: dict[str, str]) -> list[str]:
    return [c.strip() for c in configuration[STATS_COLUMNS_PROPERTY].split(",") if c.strip()]


def write(rows: pa.Table, table_dir: storage.Location, table_schema: T.StructType, stats_columns: list[str],
          spark_version: str) -> dict:
    """Write `rows` as a new Parquet file in the table's folder (local or on an object store); the `add`
    action that commits it.

    The file is invisible to every reader until a commit names it; one no commit names is
    removed by the table's next VACUUM, as a failed Spark write's files are. On an object store it
    is encoded in memory and sent as one upload: a small batch's file, a few hundred kilobytes.
    """
    name = f"part-00000-{uuid.uuid4()}-c000.{COMPRESSION}.parquet"
    metadata = {**(rows.schema.metadata or {}), SPARK_VERSION_KEY: spark_version.encode()}
    rows = rows.replace_schema_metadata(metadata)
    local = table_dir.local_path
    if local is not None:
        path = local / name
        pq.write_table(rows, path, compression=COMPRESSION, use_dictionary=DICTIONARY)
        stat = path.stat()
        size, modified_ms = stat.st_size, int(stat.st_mtime * 1000)
    else:
        buffer = pa.BufferOutputStream()
        pq.write_table(rows, buffer, compression=COMPRESSION, use_dictionary=DICTIONARY)
        content = buffer.getvalue()
        table_dir.child(name).write_bytes(content.to_pybytes())
        size, modified_ms = content.size, int(time.time() * 1000)
    return {"path": name, "partitionValues": {}, "size": size, "modificationTime": modified_ms,
            "dataChange": True, "stats": json.dumps(statistics(rows, table_schema, stats_columns),
                                                    separators=(",", ":"))}
