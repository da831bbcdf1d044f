"""Random Avro schemas and values (hypothesis) through the whole path and back: produce -> Kafka ->
`from-kafka` (Spark's reader, spark-avro's mapping) -> Delta -> an output table -> `to-kafka` (spark-avro's
encoding) -> Kafka -> decoded. Every value must read back as itself in Delta (as the Spark type the
mapping gives) and in the published record.

Classes of types tried: the primitives, enums, fixed, arrays, maps, nested records, nullable unions,
and the logical types date, timestamp-millis, timestamp-micros, decimal (bytes) and uuid, nested up
to two levels. Multi-type unions (Spark member structs) and time-of-day types (plain numbers in
Spark) are covered by test_all_types.py and do not come back as Avro as they went in, so they are not
generated here. Each example is four schemas, three records each, ingested by one `from-kafka` run.
The suite tries two examples (hypothesis's first is the simplest), the same every time
(ZYNC_FUZZ_SEED); `make fuzz` tries ZYNC_FUZZ_EXAMPLES_SLOW new ones (ZYNC_FUZZ_SEED empty: a new
seed each run).
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import os
import struct
import sys
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from egress.to_kafka import Egress
from ingest.from_kafka import Ingest, ingest_progress
from tests.egress.helpers import published
from tests.ingest.conftest import table_rows, unique
from tests.ingest.schemas import KEY
from zync.tables import raw_table_name

UTC = dt.timezone.utc
EXAMPLES = int(os.environ.get("ZYNC_FUZZ_EXAMPLES_SLOW", "2"))
SEED = os.environ.get("ZYNC_FUZZ_SEED", "1")
_names = itertools.count()


def _name(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


LOGICAL = [
    {"type": "int", "logicalType": "date"},
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "string", "logicalType": "uuid"},
]


@st.composite
def avro_types(draw, depth: int = 0) -> Any:
    kinds = ["primitive"] * 4 + ["logical", "decimal", "enum", "fixed", "nullable"]
    if depth < 2:
        kinds += ["array", "map", "record"]
    kind = draw(st.sampled_from(kinds))
    if kind == "primitive":
        return draw(st.sampled_from(["boolean", "int", "long", "float", "double", "string", "bytes"]))
    if kind == "logical":
        return dict(draw(st.sampled_from(LOGICAL)))
    if kind == "decimal":
        precision = draw(st.integers(1, 38))
        return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": draw(st.integers(0, precision))}
    if kind == "enum":
        return {"type": "enum", "name": _name("E"), "symbols": draw(st.lists(st.sampled_from(["A", "B", "C", "D"]),
                                                                              min_size=1, max_size=4, unique=True))}
    if kind == "fixed":
        return {"type": "fixed", "name": _name("F"), "size": draw(st.integers(1, 6))}
    if kind == "nullable":
        inner = draw(avro_types(depth + 1).filter(lambda t: not isinstance(t, list)))
        return ["null", inner]
    if kind == "array":
        return {"type": "array", "items": draw(avro_types(depth + 1))}
    if kind == "map":
        return {"type": "map", "values": draw(avro_types(depth + 1))}
    return record(draw, depth + 1)


def record(draw, depth: int) -> dict:
    count = draw(st.integers(1, 4))
    return {"type": "record", "name": _name("R"),
            "fields": [{"name": f"f{i}", "type": draw(avro_types(depth))} for i in range(count)]}


def values(schema: Any) -> st.SearchStrategy:
    """Values of an Avro type, as fastavro writes them."""
    if isinstance(schema, list):
        return st.one_of(st.none(), values(schema[1]))
    if isinstance(schema, str):
        return {
            "boolean": st.booleans(), "int": st.integers(-(2**31), 2**31 - 1), "long": st.integers(-(2**63), 2**63 - 1),
            "float": st.floats(width=32, allow_nan=False, allow_infinity=False),
            "double": st.floats(allow_nan=False, allow_infinity=False),
            "string": st.text(max_size=8), "bytes": st.binary(max_size=8),
        }[schema]
    logical = schema.get("logicalType")
    moments = st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1), timezones=st.just(UTC))
    if logical == "date":
        return st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1))
    if logical == "timestamp-millis":
        return moments.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))
    if logical == "timestamp-micros":
        return moments
    if logical == "uuid":
        return st.uuids().map(str)
    if logical == "decimal":
        p, s = schema["precision"], schema["scale"]
        return st.integers(-(10**p - 1), 10**p - 1).map(lambda u: decimal.Decimal(u).scaleb(-s))
    kind = schema["type"]
    if kind == "enum":
        return st.sampled_from(schema["symbols"])
    if kind == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if kind == "array":
        return st.lists(values(schema["items"]), max_size=3)
    if kind == "map":
        return st.dictionaries(st.text(max_size=4), values(schema["values"]), max_size=3)
    return st.fixed_dictionaries({f["name"]: values(f["type"]) for f in schema["fields"]})


@st.composite
def topics_with_records(draw) -> list[tuple[dict, list[dict]]]:
    found = []
    for _ in range(4):
        schema = record(draw, 1)
        schema["name"], schema["namespace"] = _name("Value"), "fuzz"
        found.append((schema, draw(st.lists(values(schema), min_size=3, max_size=3))))
    return found


def comparable(value: Any, schema: Any) -> Any:
    """A value as Spark reads it back and as the published record decodes: floats as float32, bytes as
    bytes, instants as naive UTC (the session time zone is UTC), records and maps as dicts."""
    if value is None:
        return None
    if isinstance(schema, list):
        return comparable(value, schema[1])
    kind = schema if isinstance(schema, str) else schema["type"]
    if kind == "float":
        return struct.unpack("f", struct.pack("f", value))[0]
    if kind in ("bytes", "fixed") and not (isinstance(schema, dict) and schema.get("logicalType") == "decimal"):
        return bytes(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if kind == "array":
        return [comparable(v, schema["items"]) for v in value]
    if kind == "map":
        return {k: comparable(v, schema["values"]) for k, v in value.items()}
    if kind == "record":
        as_dict = value if isinstance(value, dict) else value.asDict()
        return {f["name"]: comparable(as_dict.get(f["name"]), f["type"]) for f in schema["fields"]}
    return value


def seeded(test):
    return seed(int(SEED))(test) if SEED else test


@seeded
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@given(topics_with_records())
def test_random_schemas_round_trip_through_ingest_and_egress(producer, spark, target, generated):
    # Each topic's records in Kafka first: one ingest run takes them all (a run per topic paid its
    # start and its idle wait four times), each topic into its own raw table.
    names = []
    for schema, records in generated:
        topic = producer.topic(unique("fuzz"))
        producer.send(topic, KEY, schema, [({"id": i}, r) for i, r in enumerate(records)])
        names.append(topic)
    job = Ingest(target, names, progress=ingest_progress(live=False, stream=sys.stderr))
    assert job.run(exit_after=0.0) == sum(len(records) for _, records in generated)
    # Each topic's records are one batch (all in Kafka before the run), each read by Spark's reader (the
    # default): a topic that only ever fell back to the consumer is a bug.
    assert job.batches_read == {"spark": len(names), "consumer": 0}, job.batches_read
    for topic, (schema, records) in zip(names, generated):
        table = f"zync.{raw_table_name(topic)}"
        landed = [r.value for r in table_rows(spark, table)]
        assert [comparable(v, schema) for v in landed] == [comparable(r, schema) for r in records], schema

        # Back out: the landed values as the out rows of an output table, published by to-kafka.
        out_topic, out_table = f"{topic}_out", f"{raw_table_name(topic)}_out"
        spark.sql(f"""create or replace table zync.{out_table} using delta as
            select named_struct('topic', '{out_topic}', 'partition', 0, 'offset', kafka.offset) as kafka,
                   'out' as kind, key, value, cast(null as array<string>) as fields,
                   cast(null as string) as status, 'fuzz' as run_id
            from {table}""")
        assert Egress(target, out_table).run() == len(records)
        back = [r["value"] for r in published(target, out_topic)]
        assert [comparable(v, schema) for v in back] == [comparable(r, schema) for r in records], schema
