"""Input schemas for checking expressions: from a raw table's Delta log, without starting Spark.

A schema is Delta's JSON struct type ({"type": "struct", "fields": [...]}).
The log is read without a JVM (zync/delta_metadata.py, schema_without_spark).
`field_path_error` says what is wrong with a field path, naming the
fields that exist, or returns None when the path resolves.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from zync.delta_metadata import schema_without_spark
from zync.storage import managed_table_uri

Schema = dict[str, Any]
SchemaSource = Callable[[str], "Schema | None"]


def delta_table_schemas(warehouse: str | os.PathLike[str], database: str) -> SchemaSource:
    """A lookup table name -> its current schema, None for a table not (yet) written.

    Tables are found where the catalog's managed tables live: <warehouse>/<database>.db/<table>, the
    warehouse a folder or an object store's URI.
    """

    def lookup(table: str) -> Schema | None:
        return schema_without_spark(managed_table_uri(warehouse, database, table))

    return lookup


def _fields(struct: Any) -> list[dict] | None:
    return struct.get("fields") if isinstance(struct, dict) and struct.get("type") == "struct" else None


def field_path_error(schema: Schema, path: list[str]) -> str | None:
    """None if path (e.g. ['value', 'after', 'ID']) names a field of schema; else what is wrong."""
    node: Any = schema
    walked: list[str] = []
    for name in path:
        fields = _fields(node)
        if fields is None:
            return f"`{'.'.join(walked)}` is not a struct, so it has no field `{name}`"
        match = next((f for f in fields if f["name"].lower() == name.lower()), None)
        if match is None:
            where = f"`{'.'.join(walked)}`" if walked else "the input table"
            existing = ", ".join(f["name"] for f in fields) or "none"
            return f"unknown field `{name}` in {where}; the fields there are: {existing}"
        walked.append(match["name"])
        node = match["type"]
    return None


def struct_field_names(schema: Schema, path: list[str]) -> list[str] | None:
    """The field names of the struct at path (a path that resolves), or None if it is not a struct."""
    node: Any = schema
    for name in path:
        node = next(f for f in _fields(node) or [] if f["name"].lower() == name.lower())["type"]
    fields = _fields(node)
    return None if fields is None else [f["name"] for f in fields]
