"""How a batch is decoded and written, on the real broker, registry, Spark and Delta.

What bench/ingest_warm.py measured and ingest now relies on: a batch into a table
that exists decodes each value once (not once per field), and the raw table's Parquet
files are zstd without dictionary pages, whatever the session's own Parquet settings, and
a small batch is one file, whichever reader wrote it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pyarrow.parquet as pq

from ingest.fallback import spark_options
from ingest.schemas import WriterSchemas
from ingest.spark_job import decode_batch, kafka_batch
from ingest.table import PARQUET_SETTINGS
from tests.ingest.conftest import table_rows, unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event
from zync.spark_internals import java_frame
from zync.tables import raw_table_name
from zync.wire import Registry


def _row(i: int) -> dict:
    return {"id": i, "name": f"item {i}", "qty": i}


def _parquet_files(spark, table: str) -> list[Path]:
    location = spark.sql(f"describe detail {table}").first()["location"]
    return sorted(Path(location.removeprefix("file:")).glob("*.parquet"))


def test_a_batch_into_an_existing_table_decodes_each_value_once(producer, ingest, spark, target):
    topic = producer.topic(unique("once"))
    producer.send(topic, KEY, envelope(ROW_V1), [({"id": i}, event("c", _row(i))) for i in range(4)])
    assert ingest(topic) == 4
    table = f"zync.{raw_table_name(topic)}"
    schema = spark.table(table).schema
    writers = WriterSchemas(spark, Registry(target.schema_registry))
    keys = [writers.writer(i) for i in writers.subject_ids(f"{topic}-key")]
    values = [writers.writer(i) for i in writers.subject_ids(f"{topic}-value")]
    # Delta reads the table's columns back nullable: the writer's type differs from it in that alone.
    assert values[0].spark_type != schema["value"].dataType

    raw = kafka_batch(spark, spark_options(target.kafka), topic, {0: (0, 4)}, keys, values)
    frame = decode_batch(raw, keys, values, schema["key"].dataType, schema["value"].dataType)
    plan = java_frame(frame).queryExecution().optimizedPlan().toString()
    # One from_avro for the key, one for the value; a struct rebuilt field by field repeated the value's
    # decoding for every field it reads (6x the time of a batch into a new table).
    assert plan.count("from_avro(") == 2, plan
    assert frame.schema["value"].dataType == schema["value"].dataType
    assert [r.asDict(recursive=True) for r in frame.orderBy("kafka.offset").collect()] == \
        [r.asDict(recursive=True) for r in table_rows(spark, table)]


@pytest.mark.parametrize("reader", ["spark", "python"])
def test_raw_files_are_zstd_without_dictionaries_one_per_small_batch_and_the_session_keeps_its_settings(
        producer, ingest, spark, reader):
    topic = producer.topic(unique(f"files-{reader}"))
    codec = "spark.sql.parquet.compression.codec"
    before = spark.conf.get(codec)
    for first in (0, 3):  # the batch that creates the table, then one into the table that exists
        # A tombstone too: its own writer-schema group in the batch, which once wrote a file of its own.
        records = [({"id": i}, event("c", _row(i))) for i in range(first, first + 3)] + [({"id": first}, None)]
        producer.send(topic, KEY, envelope(ROW_V1), records)
        assert ingest(topic, reader=reader) == 4
    table = f"zync.{raw_table_name(topic)}"
    files = _parquet_files(spark, table)
    # One file per small batch: a service appending every few seconds would otherwise add one per
    # core and per writer-schema group, and every run reading the table opens each.
    assert len(files) == 2, [f.name for f in files]
    for path in files:
        meta = pq.ParquetFile(path).metadata
        for g in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                column = meta.row_group(g).column(c)
                assert column.compression == "ZSTD", (path.name, column.path_in_schema)
                assert not [e for e in column.encodings if "DICTIONARY" in e], (column.path_in_schema, column.encodings)
    # Set for the raw table's writes only: the session (dbt's, in zync run) keeps its own.
    assert spark.conf.get(codec) == before
    assert spark.conf.get("parquet.enable.dictionary", None) is None
    assert PARQUET_SETTINGS[codec] == "zstd"
    assert [r.key.id for r in table_rows(spark, table)] == [0, 1, 2, 0, 3, 4, 5, 3]
