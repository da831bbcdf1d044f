"""The raw pool's pure parts: JSON text of decoded values, the raw view's SQL, and how a pool commit is counted."""

from __future__ import annotations

import datetime as dt
import decimal
import json

from pyspark.sql import types as T

from ingest.pool_json import to_json
from ingest.pool_view import ddl, view_sql
from service.versions import CommitSummary
from zync.pools import CHANGED_PROPERTY, file_topic, file_topics, topics_tag


def test_values_are_written_as_sparks_json_reader_reads_them_back():
    datum = {"at": dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=dt.timezone.utc),
             "local": dt.datetime(2026, 3, 1, 12, 0, 0, 5), "day": dt.date(1, 1, 1),
             "price": decimal.Decimal("-0.0000000001"), "raw": b"\x00\xff", "nan": float("nan"), "none": None,
             "nested": {"list": [1, None], "map": {"k": float("inf")}}}
    text = to_json(datum)
    assert json.loads(text, parse_constant=str) == {
        "at": "2026-03-01T12:00:00.123456+00:00", "local": "2026-03-01T12:00:00.000005", "day": "0001-01-01",
        "price": "-0.0000000001", "raw": "AP8=", "nan": "NaN", "none": None,
        "nested": {"list": [1, None], "map": {"k": "Infinity"}}}
    assert to_json(None) is None


def test_the_raw_view_types_key_and_value_with_every_name_quoted():
    value = T.StructType([T.StructField("a `b", T.DecimalType(12, 2)),
                          T.StructField("m", T.MapType(T.StringType(), T.ArrayType(T.TimestampNTZType())))])
    assert ddl(value) == "STRUCT<`a ``b`: DECIMAL(12, 2), `m`: MAP<STRING, ARRAY<TIMESTAMP_NTZ>>>"
    sql = view_sql("db.raw_t", "db.raw_pool", "pg.public.t'1", T.StructType([T.StructField("id", T.LongType())]), value)
    assert sql.startswith("CREATE OR REPLACE VIEW `db`.`raw_t` AS SELECT `pool`.`kafka` AS `kafka`, "
                          "FROM_JSON(`pool`.`key`, 'STRUCT<`id`: BIGINT>') AS `key`, FROM_JSON(`pool`.`value`, ")
    assert sql.endswith("FROM `db`.`raw_pool` AS `pool` WHERE `pool`.`kafka`.`topic` = 'pg.public.t\\'1'")
    # At a connector's cut: each partition's rows up to its offset in the cut, none without one; the cut
    # is one subquery, the same in every view of the connector (a query over several computes it once).
    at_cut = view_sql("db.raw_t", "db.raw_pool", "pg.public.t'1", T.StringType(), value,
                      cut=("db.raw_pool__cut", "pg.transaction"))
    assert at_cut.endswith(
        "FROM `db`.`raw_pool` AS `pool` WHERE `pool`.`kafka`.`topic` = 'pg.public.t\\'1' AND "
        "`pool`.`kafka`.`offset` <= COALESCE(ELEMENT_AT(ELEMENT_AT((SELECT `offsets` FROM `db`.`raw_pool__cut` "
        "WHERE `connector` = 'pg.transaction'), 'pg.public.t\\'1'), `pool`.`kafka`.`partition`), -1)")
    assert "JOIN" not in at_cut


def _add(topic_low: str, topic_high: str, rows: int, data_change: bool = True) -> str:
    stats = {"numRecords": rows, "minValues": {"kafka": {"topic": topic_low, "offset": 0}},
             "maxValues": {"kafka": {"topic": topic_high, "offset": rows - 1}}}
    return json.dumps({"add": {"path": "f", "dataChange": data_change, "stats": json.dumps(stats)}})


def test_a_pool_commit_is_counted_per_topic_from_its_files_and_metadata():
    metadata = json.dumps({"metaData": {"configuration": {CHANGED_PROPERTY: json.dumps(["b"])}}})
    summary = CommitSummary.of([metadata, _add("a", "a", 3), _add("b", "b", 2), _add("a", "c", 5),
                                _add("a", "a", 7, data_change=False), '{"commitInfo":{}}'])
    assert summary.rows == 10 and summary.schema_changed
    assert summary.topic_rows == {"a": 3, "b": 2} and summary.changed_topics == {"b"}
    assert file_topic({"minValues": {"kafka": {"topic": "a"}}, "maxValues": {"kafka": {"topic": "b"}}}) is None
    assert file_topic({}) is None


def test_a_pool_file_tells_each_topics_rows_and_offsets_by_its_tag():
    tags = topics_tag({"a": {0: (2, 7), 1: (1, 3)}, "b": {0: (4, 9)}})
    add = {"path": "f", "dataChange": True, "tags": tags,
           "stats": json.dumps({"numRecords": 7, "minValues": {"kafka": {"topic": "a"}},
                                "maxValues": {"kafka": {"topic": "b"}}})}
    assert file_topics(add, json.loads(add["stats"])) == {"a": {"rows": 3, "offsets": {0: 7, 1: 3}},
                                                           "b": {"rows": 4, "offsets": {0: 9}}}
    summary = CommitSummary.of([json.dumps({"add": add})])
    assert summary.topic_rows == {"a": 3, "b": 4} and summary.rows == 7
