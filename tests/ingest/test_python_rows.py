"""Small batches decoded and written in Python (ingest/arrow_rows.py, ingest/data_file.py) against Spark's
own write of the same messages: the same rows, the same statistics where they are kept, the same
exactly-once checks.

Each topic is ingested twice by the consumer's reader, into a table whose small batches go through
the Python path (its first batch creates it without a Spark job, then is written in Python) and into
one whose batches all go through Spark (its first batch creates it). The Spark-written twin is the
oracle: the same columns and properties, rows and statistics.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from pyspark.sql import functions as F

from ingest.from_kafka import Ingest, ingest_progress
from ingest.table import WRITER_SCHEMAS_PROPERTY, ConcurrentIngestError, RawTable
from tests.ingest.conftest import unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event, row
from tests.ingest.test_all_types import SCHEMA as ALL_TYPES, VALUES as ALL_VALUES
from tests.ingest.test_type_fuzz import seeded, topics_with_records

UTC = dt.timezone.utc
# Every type but the two unions of several types (Spark's member structs), which the Python path leaves to Spark.
PLAIN = {**ALL_TYPES, "fields": [f for f in ALL_TYPES["fields"] if f["name"] not in ("il", "multi")]}
PLAIN_VALUES = [{k: v for k, v in value.items() if k not in ("il", "multi")} for value in ALL_VALUES]
EDGES = {"type": "record", "name": "Edges", "namespace": "ingest.test", "fields": [
    {"name": "old_day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "old_at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "tmu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "wide", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 10}},
    {"name": "nested", "type": {"type": "array", "items": {"type": "map", "values": ["null", {
        "type": "record", "name": "Leaf", "fields": [{"name": "n", "type": ["null", "double"]}]}]}}},
]}
EDGE_VALUES = [
    {"old_day": dt.date(1582, 10, 15), "old_at": dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
     "local_ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000), "tmu": dt.time(23, 59, 59, 999999),
     "wide": decimal.Decimal("-1234567890123456789012345678.0123456789"),
     "nested": [{"a": {"n": 1.5}, "b": None}, {}, {"c": {"n": None}}]},
    {"old_day": dt.date(9999, 12, 31), "old_at": dt.datetime(1970, 1, 1, tzinfo=UTC),
     "local_ms": dt.datetime(2038, 1, 19, 3, 14, 8), "tmu": dt.time(0, 0), "wide": decimal.Decimal("0E-10"),
     "nested": []},
]


def _ingest(target, topic: str, table: str, python_rows: bool) -> Ingest:
    job = Ingest(target, [topic], table=table, reader="python", python_rows=python_rows,
                 progress=ingest_progress(live=False, stream=sys.stderr))
    job.run(exit_after=0.0)
    return job


def _rows(spark, table: str) -> list[str]:
    """Every row as JSON (maps and all), in offset order, its maps' entries by key: a map's entries
    have no order (fastavro keeps the writer's, Spark's Avro reader a hash map's), and the columns'
    order is the schema's, compared on its own."""
    return [json.dumps(json.loads(r[0]), sort_keys=True)
            for r in spark.table(table).orderBy("kafka.partition", "kafka.offset")
            .select(F.to_json(F.struct("*"))).collect()]


def _last_commit(spark, table: str, kind: str) -> dict:
    """The `kind` action (add, commitInfo, txn) of the table's last commit."""
    location = Path(spark.sql(f"describe detail {table}").first()["location"].removeprefix("file:"))
    last = sorted((location / "_delta_log").glob("*.json"))[-1]
    return next(json.loads(line)[kind] for line in last.read_text().splitlines() if line.startswith(f'{{"{kind}"'))


def _properties(spark, table: str) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}


def _last_add(spark, table: str) -> dict:
    return _last_commit(spark, table, "add")


def _subset(kept: dict, full: dict, path: str = "") -> None:
    """Every statistic kept in `kept` is in `full` with the same value."""
    for name, value in kept.items():
        assert name in full, f"{path}{name} is not in Spark's statistics {full}"
        if isinstance(value, dict):
            _subset(value, full[name], f"{path}{name}.")
        else:
            assert value == full[name], f"{path}{name}: {value} against Spark's {full[name]}"


def twins(producer, target, spark, schema: dict, values: list) -> tuple[str, str]:
    """The records ingested into a Python-path table and a Spark-written one: the first record creates
    both, the rest (and a tombstone) come as one more small batch. Both tables' names."""
    topic = producer.topic(unique("pyrows"))
    tables = {True: f"zync.{topic}_py", False: f"zync.{topic}_spark"}
    producer.send(topic, KEY, schema, [({"id": 0}, values[0])])
    for python_rows, table in tables.items():
        job = _ingest(target, topic, table, python_rows)
        assert job.committer.python_commits == (1 if python_rows else 0), job.states[topic].table.declined
    # Created by the catalog, then a Python-written commit: what Spark's creating append makes.
    assert spark.table(tables[True]).schema.json() == spark.table(tables[False]).schema.json()
    assert _properties(spark, tables[True]) == _properties(spark, tables[False])
    producer.send(topic, KEY, schema, [({"id": i}, v) for i, v in enumerate(values[1:] + [None], 1)])
    for python_rows, table in tables.items():
        job = _ingest(target, topic, table, python_rows)
        assert job.committer.python_commits == (1 if python_rows else 0), job.states[topic].table.declined
    return tables[True], tables[False]


@pytest.mark.parametrize("schema, values", [(PLAIN, PLAIN_VALUES), (EDGES, EDGE_VALUES),
                                            (envelope(ROW_V1), [event("c", {"id": i, "name": f"n{i}", "qty": i})
                                                                for i in range(3)])],
                         ids=["every-plain-type", "edges", "debezium"])
def test_a_small_batch_written_in_python_holds_the_rows_and_statistics_spark_writes(producer, target, spark,
                                                                                   schema, values):
    python, spark_written = twins(producer, target, spark, schema, values)
    assert _rows(spark, python) == _rows(spark, spark_written)
    assert spark.table(python).count() == len(values) + 1  # COUNT(*) from the statistics' numRecords
    ours, theirs = json.loads(_last_add(spark, python)["stats"]), json.loads(_last_add(spark, spark_written)["stats"])
    assert ours["numRecords"] == theirs["numRecords"] == len(values)
    _subset({k: v for k, v in ours.items() if k != "numRecords"}, theirs)
    assert ours["maxValues"]["kafka"]["offset"] == len(values)
    # The commit itself reads as Spark's append does: operation, metrics, the ingest's marker and txn.
    info, their_info = _last_commit(spark, python, "commitInfo"), _last_commit(spark, spark_written, "commitInfo")
    assert (info["operation"], info["isBlindAppend"]) == (their_info["operation"], their_info["isBlindAppend"])
    assert info["operationMetrics"]["numOutputRows"] == their_info["operationMetrics"]["numOutputRows"] == str(len(values))
    assert info["userMetadata"].startswith("zync-from-kafka run ")
    assert _last_commit(spark, python, "txn")["version"] == _last_commit(spark, spark_written, "txn")["version"]
    if schema["name"] == "Envelope":  # what zync run's freshness reads
        assert ours["minValues"]["value"]["source"]["ts_ms"] == theirs["minValues"]["value"]["source"]["ts_ms"]


def test_what_a_batch_says_of_its_writer_schemas_lands_in_its_own_commit(producer, target, spark):
    """A field with a default (as every Debezium schema has) makes ingest keep the table's writer schema
    ids and the defaults beside it: set by the Python-written batch's own commit, where Spark's write
    is followed by an ALTER TABLE of its own; the same properties either way."""
    with_default = envelope(row([{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                                 {"name": "qty", "type": "int", "default": 0}]))
    values = [event("c", {"id": i, "name": f"n{i}", "qty": i}) for i in range(3)]
    python, spark_written = twins(producer, target, spark, with_default, values)
    ours = _properties(spark, python)
    assert ours[WRITER_SCHEMAS_PROPERTY] == _properties(spark, spark_written)[WRITER_SCHEMAS_PROPERTY]
    assert json.loads(ours[WRITER_SCHEMAS_PROPERTY])["value"], ours
    assert [r.operation for r in spark.sql(f"describe history {python}").collect()] == \
        ["WRITE", "WRITE", "CREATE TABLE"]
    assert "SET TBLPROPERTIES" in [r.operation for r in spark.sql(f"describe history {spark_written}").collect()]
    assert _rows(spark, python) == _rows(spark, spark_written)


def test_a_batch_with_a_union_of_several_types_goes_through_spark(producer, target, spark):
    topic = producer.topic(unique("pyrows_union"))
    table = f"zync.{topic}_py"
    producer.send(topic, KEY, ALL_TYPES, [({"id": 0}, ALL_VALUES[0])])
    _ingest(target, topic, table, True)
    producer.send(topic, KEY, ALL_TYPES, [({"id": 1}, ALL_VALUES[1])])
    job = _ingest(target, topic, table, True)
    assert job.committer.python_commits == 0
    assert "several types" in job.states[topic].table.declined
    assert spark.table(table).count() == 2


def test_a_restart_after_python_commits_resumes_where_they_ended(producer, target, spark):
    python, _ = twins(producer, target, spark, envelope(ROW_V1), [event("c", {"id": i, "name": "n", "qty": i})
                                                                   for i in range(4)])
    topic = python.removeprefix("zync.").removesuffix("_py")
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": 9}, event("u", {"id": 9, "name": "m", "qty": 9}))])
    job = _ingest(target, topic, python, True)
    assert job.committer.python_commits == 1
    offsets = [r.o for r in spark.sql(f"select kafka.offset as o from {python} order by o").collect()]
    assert offsets == list(range(6))


@seeded
@settings(max_examples=2, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@given(topics_with_records())
def test_random_schemas_written_in_python_read_as_spark_writes_them(producer, target, spark, generated):
    for schema, records in generated[:2]:
        python, spark_written = twins(producer, target, spark, schema, records)
        assert _rows(spark, python) == _rows(spark, spark_written), schema


def test_a_crash_between_a_new_tables_create_and_its_catalog_entry_loses_and_repeats_nothing(
        producer, target, spark, monkeypatch):
    """A new table is committed before the catalog names it: an ingest stopped between the two leaves
    a table in the catalog's folder that no name reaches. The next ingest enters it in the catalog
    and ingests from where the table ends: every offset once."""
    import ingest.table

    topic = producer.topic(unique("orphan"))
    table = f"zync.{topic}"
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": i}, event("c", {"id": i, "name": "n", "qty": i}))
                                                  for i in range(3)])

    def crash(*_args):
        raise RuntimeError("the process stopped here")

    monkeypatch.setattr(ingest.table, "register", crash)
    with pytest.raises(RuntimeError, match="the process stopped here"):
        _ingest(target, topic, table, True)
    assert not spark.catalog.tableExists(table)
    monkeypatch.undo()
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": 3}, event("c", {"id": 3, "name": "n", "qty": 3}))])
    job = _ingest(target, topic, table, True)
    assert job.committer.python_commits == 1
    offsets = [r.o for r in spark.sql(f"select kafka.offset as o from {table} order by o").collect()]
    assert offsets == [0, 1, 2, 3]
    detail = spark.sql(f"describe extended {table}").collect()
    assert {r.col_name: r.data_type for r in detail}["Type"] == "MANAGED"


def test_of_two_ingests_of_one_table_the_later_python_commit_is_refused(spark, tmp_path, producer, target):
    """Two ingests saw the same table version; the first commits in Python: the second must not add its
    rows too (the before-commit check sees the first's commit)."""
    python, _ = twins(producer, target, spark, envelope(ROW_V1), [event("c", {"id": 0, "name": "n", "qty": 0})])
    first, second = RawTable(spark, name=python), RawTable(spark, name=python)
    for table in (first, second):
        table.resume(python.removeprefix("zync.").removesuffix("_py"))
    before = spark.table(python).count()
    assert first.append_rows(lambda s: _null_rows(s, 100), "batch 1")
    with pytest.raises(ConcurrentIngestError, match="another ingest is writing table"):
        second.append_rows(lambda s: _null_rows(s, 101), "batch 1")
    assert spark.table(python).count() == before + 1


def _null_rows(schema, offset: int) -> pa.Table:
    from pyspark.sql.pandas.types import to_arrow_type
    arrow = pa.schema([pa.field(f.name, to_arrow_type(f.dataType), nullable=f.nullable) for f in schema.fields])
    return pa.Table.from_pylist([{"kafka": {"topic": "t", "partition": 0, "offset": offset, "timestamp": None,
                                            "key_schema_id": None, "value_schema_id": None},
                                  "key": None, "value": None}], schema=arrow)
