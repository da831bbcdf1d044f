"""Avro schemas inferred from JSON values, for `zync produce` without .avsc files.

Every value seen shapes the schema: objects become records whose fields are
the union of the fields of all objects at that place, each optional
(["null", T], default null) so that later shapes of the subject stay
compatible; JSON integers become long, other numbers double (a field seen
with both is double); arrays take the merged type of all their items. A
field that is a string in one line and a number in another cannot be
inferred: the error names it, and an .avsc file settles it.
"""

from __future__ import annotations

from typing import Any

from zync.errors import ZyncError

# Internal shapes: "null", "boolean", "long", "double", "string",
# ("array", item shape), ("record", {field: shape}).


def _kind(shape: Any) -> str:
    return shape if isinstance(shape, str) else shape[0]


def _shape_of(value: Any, path: str) -> Any:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        item: Any = "null"
        for i, v in enumerate(value):
            item = merge(item, _shape_of(v, f"{path}[{i}]"), f"{path}[]")
        return ("array", item)
    if isinstance(value, dict):
        return ("record", {k: _shape_of(v, f"{path}.{k}") for k, v in value.items()})
    raise ZyncError(f"{path}: cannot infer an Avro type for {type(value).__name__}")


def merge(a: Any, b: Any, path: str) -> Any:
    """The shape that holds values of both shapes, or a ZyncError naming the place."""
    ka, kb = _kind(a), _kind(b)
    if ka == "null":
        return b
    if kb == "null" or a == b:
        return a
    if {ka, kb} == {"long", "double"}:
        return "double"
    if ka == kb == "array":
        return ("array", merge(a[1], b[1], f"{path}[]"))
    if ka == kb == "record":
        fields = dict(a[1])
        for name, shape in b[1].items():
            fields[name] = merge(fields.get(name, "null"), shape, f"{path}.{name}")
        return ("record", fields)
    raise ZyncError(f"{path} is a {ka} in one record and a {kb} in another: give the schema "
                    "with --key-schema / --value-schema (an .avsc file)")


def _avro(shape: Any, name: str) -> Any:
    kind = _kind(shape)
    if kind == "array":
        item = _avro(shape[1], f"{name}_item")
        return {"type": "array", "items": item if item == "null" else ["null", item]}
    if kind == "record":
        fields = []
        for field, inner in shape[1].items():
            avro = _avro(inner, f"{name}_{field}")
            fields.append({"name": field, "type": avro if avro == "null" else ["null", avro], "default": None})
        return {"type": "record", "name": name, "fields": fields}
    return kind


def infer_schema(values: Any, name: str) -> Any:
    """The Avro schema for an iterable of JSON values (None: a tombstone or absent key)."""
    shape: Any = "null"
    for n, value in enumerate(values, start=1):
        shape = merge(shape, _shape_of(value, f"record {n}: {name}"), name)
    return _avro(shape, name)
