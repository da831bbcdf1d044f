"""A decoded Avro datum as the JSON text a raw pool keeps, which Spark's `from_json` reads back exactly.

A raw pool (ingest/pool.py) holds many topics in one Delta table, so its `key`
and `value` columns cannot take each topic's types; they keep each record as
JSON text, and each topic's raw view (`from_json` with the topic's Spark type,
ingest/pool_view.py) gives the rows spark-avro's types again. This module is
the one place that says how each value is written so that the view reads it
back unchanged:
- timestamps: ISO 8601 with microseconds (and the offset for an instant), which
  Spark's default JSON timestamp parser reads to the microsecond;
- dates: ISO 8601 (Python's and Spark's calendars are both proleptic Gregorian);
- decimals: their exact digits as a string (Spark parses a decimal from a string);
- bytes and fixed: base64, as Spark's JSON reader and writer use for binary;
- floats and doubles: Python's repr, NaN and Infinity as bare tokens (Spark's
  `allowNonNumericNumbers`, on by default).
The datum is fastavro's, read with ingest/arrow_rows.base_schema (spark-avro's
logical types, no union of several types).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return value


def to_json(datum: Any) -> str | None:
    """The JSON text of a decoded datum (None for None: a tombstone or an absent key)."""
    if datum is None:
        return None
    return json.dumps(_plain(datum), ensure_ascii=False, separators=(",", ":"), allow_nan=True)
