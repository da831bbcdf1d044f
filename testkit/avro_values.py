"""fastavro datums as the Python values Spark takes for the types spark-avro gives their schemas
(zync.avro_types.spark_type): fixtures build raw tables' rows with `value_converter` where
zync's ingest would decode in the JVM."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from zync.avro_types import AvroTypeError, _branches, _full_name, _Resolver


def _converter(schema: Any, r: _Resolver, ns: str | None) -> Callable[[Any], Any] | None:
    """None means the datum passes as it is (the common case, kept free)."""
    schema, ns = r.resolve(schema, ns)
    if isinstance(schema, str):
        return None
    if isinstance(schema, list):
        branches, _ = _branches(schema)
        if len(branches) == 1:
            inner = _converter(branches[0], r, ns)
            return None if inner is None else (lambda v: None if v is None else inner(v))
        resolved = [r.resolve(b, ns)[0] for b in branches]
        kinds = [b if isinstance(b, str) else b.get("type") for b in resolved]
        if set(kinds) <= {"int", "long"} or set(kinds) <= {"float", "double"}:
            return None
        converters = [_converter(b, r, ns) for b in branches]
        names = [_full_name(b, ns) if isinstance(b, dict) and b.get("type") in ("record", "error") else None
                 for b in resolved]
        # Records of a multi-record union come from fastavro as (full name, dict)
        # (Registry.decode(record_names=True)); other branches are told by their
        # Python type, so int/long or float/double side by side with other types
        # take the first of the two (fastavro cannot tell them apart; JVM decoding can).
        python_types = [_python_type(b) for b in resolved]

        def union(v: Any) -> Any:
            if v is None:
                return None
            out: list[Any] = [None] * len(branches)
            if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) and v[0] in names:
                i = names.index(v[0])
                out[i] = converters[i](v[1]) if converters[i] else v[1]
                return tuple(out)
            for i, py in enumerate(python_types):
                if names[i] is None and isinstance(v, py) and not (py is int and isinstance(v, bool)):
                    out[i] = converters[i](v) if converters[i] else v
                    return tuple(out)
            if isinstance(v, dict):  # a union with a single record branch among other types
                i = next(i for i, n in enumerate(names) if n is not None)
                out[i] = converters[i](v) if converters[i] else v
                return tuple(out)
            raise AvroTypeError(f"value {v!r} matches no branch of union {schema!r}")
        return union
    kind, logical = schema["type"], schema.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros"):
        return None  # fastavro returns aware UTC datetimes, which Spark takes as they are
    if logical == "uuid":
        return lambda v: None if v is None else str(v)
    if logical == "time-millis" and kind == "int":
        # spark-avro keeps time-of-day as the raw int (ms since midnight); fastavro returns a time.
        return lambda v: None if v is None else _time_units(v, 1000)
    if logical == "time-micros" and kind == "long":
        return lambda v: None if v is None else _time_units(v, 1)
    if kind in ("record", "error"):
        full = _full_name(schema, ns)
        r.in_progress.add(full)
        inner_ns = full.rpartition(".")[0] or None
        names = [f["name"] for f in schema["fields"]]
        convs = [_converter(f["type"], r, inner_ns) for f in schema["fields"]]
        r.in_progress.discard(full)
        r.named[full] = schema
        pairs = list(zip(names, convs))
        if all(c is None for c in convs):
            return lambda d: None if d is None else tuple(d.get(n) for n in names)
        return lambda d: None if d is None else tuple(
            (c(d.get(n)) if c and d.get(n) is not None else d.get(n)) for n, c in pairs)
    if kind in ("enum", "fixed"):
        r.named[_full_name(schema, ns)] = schema
        return None
    if kind == "array":
        inner = _converter(schema["items"], r, ns)
        return None if inner is None else (lambda v: None if v is None else [inner(x) for x in v])
    if kind == "map":
        inner = _converter(schema["values"], r, ns)
        return None if inner is None else (lambda v: None if v is None else {k: inner(x) for k, x in v.items()})
    return None


def _time_units(v: dt.time | int, micros_per_unit: int) -> int:
    if isinstance(v, int):
        return v
    micros = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    return micros // micros_per_unit


def _python_type(schema: Any) -> type | tuple[type, ...]:
    """The Python type fastavro (through value_converter) gives a union branch, to tell branches apart."""
    kind = schema if isinstance(schema, str) else schema.get("type")
    logical = None if isinstance(schema, str) else schema.get("logicalType")
    if logical == "decimal":
        return object  # as Spark's DecimalType was: matches any value
    by_logical = {"date": dt.date, "timestamp-millis": dt.datetime, "timestamp-micros": dt.datetime,
                  "local-timestamp-millis": dt.datetime, "local-timestamp-micros": dt.datetime, "uuid": str,
                  "time-millis": int, "time-micros": int}
    if logical in by_logical:
        return by_logical[logical]
    return {"boolean": bool, "int": int, "long": int, "float": float, "double": float, "string": str,
            "bytes": (bytes, bytearray), "fixed": (bytes, bytearray), "enum": str, "record": dict, "error": dict,
            "array": list, "map": dict}.get(kind, object)


def value_converter(avro_schema: Any) -> Callable[[Any], Any]:
    """A function from a fastavro datum to the Python value Spark accepts for spark_type(avro_schema)."""
    convert = _converter(avro_schema, _Resolver(), None)
    return convert if convert is not None else (lambda v: v)
