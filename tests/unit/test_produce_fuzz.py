"""`zync produce` input under random JSON lines (hypothesis), the part before Kafka: reading the
lines, inferring the key and value schemas, encoding each record in the Confluent wire format.

The property: either a ZyncError a user can act on (naming the line or the field), or schemas that
fastavro accepts and records that encode and decode back to themselves. Never another exception.
Input classes: any text as a line; JSON objects of random shapes (nested objects, arrays, mixed
numbers, nulls, unicode) as key and value; the same field with different types across lines.
"""

from __future__ import annotations

import io
import json
import math
import os

import fastavro
from hypothesis import event, given, settings
from hypothesis import strategies as st

from zync.errors import ZyncError
from zync.schema_inference import infer_schema
from zync.topics import read_json_lines
from zync.wire import HEADER, WriterSchema, encode

FUZZ = settings(max_examples=int(os.environ.get("ZYNC_FUZZ_EXAMPLES", "150")), deadline=None, database=None)

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
FIELD_NAMES = st.sampled_from(["id", "name", "qty", "a", "b", "ID", "nested", "x y", "1st", "é"])
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(FIELD_NAMES, inner, max_size=4)), max_leaves=10)
RECORDS = st.lists(st.fixed_dictionaries({}, optional={"key": JSON_VALUES, "value": JSON_VALUES}), min_size=1, max_size=5)


def same(decoded, original) -> bool:
    """Equal as zync promises: JSON integers stay integers, floats compare as floats (a field seen
    as both is a double), missing fields of an object read back as null."""
    if isinstance(original, dict):
        return isinstance(decoded, dict) and all(same(decoded.get(k), v) for k, v in original.items()) and all(
            decoded[k] is None for k in set(decoded) - set(original))
    if isinstance(original, list):
        return isinstance(decoded, list) and len(decoded) == len(original) and all(map(same, decoded, original))
    if isinstance(original, (int, float)) and not isinstance(original, bool) and isinstance(decoded, (int, float)):
        return math.isclose(decoded, original, rel_tol=0, abs_tol=0) or float(decoded) == float(original)
    return decoded == original and type(decoded) is type(original)


def produced(records: list[dict]) -> None:
    """What `zync produce` does before Kafka; a ZyncError is an answer, anything else a bug."""
    lines = io.StringIO("".join(json.dumps(r) + "\n" for r in records))
    try:
        read = read_json_lines(lines, "input.jsonl")
        for part in ("key", "value"):
            schema = infer_schema((r.get(part) for r in read), f"t_{part}")
            if schema == "null":
                continue
            writer = WriterSchema(7, schema, fastavro.parse_schema(schema))
            for record in read:
                if record.get(part) is None:
                    continue
                data = encode(writer, record[part])
                assert HEADER.unpack_from(data) == (0, 7)
                decoded = fastavro.schemaless_reader(io.BytesIO(data[HEADER.size:]), writer.parsed, None)
                assert same(decoded, record[part]), (decoded, record[part])
        event("encoded and decoded")
    except ZyncError as e:
        assert str(e), "an empty error message"
        event(f"refused: {str(e).split(':')[-2][-30:] if ':' in str(e) else str(e)[:30]}")


@FUZZ
@given(RECORDS)
def test_random_records_encode_and_decode_or_say_why(records):
    produced(records)


@FUZZ
@given(st.lists(st.text(max_size=40), min_size=1, max_size=4))
def test_any_line(lines):
    stream = io.StringIO("\n".join(lines) + "\n")
    try:
        read_json_lines(stream, "input.jsonl")
    except ZyncError as e:
        assert str(e).startswith("input.jsonl:"), str(e)
