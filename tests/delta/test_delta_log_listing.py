"""The log store Spark uses for tables in local folders (jvm/delta-log-listing) lists what Delta's own does.

Every read and commit of a Delta table lists its _delta_log from a version on,
so a listing that missed a commit would hide data from a reader and a racing
writer from Delta's conflict check. These compare the store, file by file,
with Delta's HDFSLogStore on a real table's log: commits, checksums,
checkpoints, Hadoop's hidden .crc files and the _last_checkpoint file.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from zync.spark_internals import delta_log, java_class

STORE = "zync.delta.NameFirstLogStore"


def _statuses(iterator) -> list[tuple[str, int, int, bool]]:
    listed = []
    while iterator.hasNext():
        status = iterator.next()
        listed.append((status.getPath().toString(), status.getLen(), status.getModificationTime(),
                       status.isDirectory()))
    return listed


@pytest.fixture(scope="module")
def table_with_checkpoints(spark, tmp_path_factory) -> Path:
    location = tmp_path_factory.mktemp("log-listing") / uuid.uuid4().hex
    spark.sql(f"CREATE TABLE delta.`{location}` (id BIGINT) USING DELTA "
              "TBLPROPERTIES ('delta.checkpointInterval' = '4')")
    for i in range(10):
        spark.range(i, i + 1).write.format("delta").mode("append").save(str(location))
    return location


def test_the_session_lists_local_tables_with_the_name_first_store(spark, table_with_checkpoints):
    log = delta_log(spark, str(table_with_checkpoints))
    first = java_class(spark, "org.apache.hadoop.fs.Path")(f"file:{table_with_checkpoints}/_delta_log/"
                                                          + "0" * 20)
    assert log.store().getDelegate(first).logStoreImpl().getClass().getName() == STORE


def test_every_listing_equals_deltas_own(spark, table_with_checkpoints):
    log_folder = table_with_checkpoints / "_delta_log"
    names = {p.name for p in log_folder.iterdir()}
    # The folder holds what a listing must skip (Hadoop's .crc files sort before the versions)
    # and what it must return: commits, Delta's checksums, checkpoints, _last_checkpoint.
    assert any(n.startswith(".") for n in names)
    assert any(n.endswith(".checkpoint.parquet") for n in names) and "_last_checkpoint" in names
    log = delta_log(spark, str(table_with_checkpoints))
    conf = log.newDeltaHadoopConf()
    path = java_class(spark, "org.apache.hadoop.fs.Path")
    ours = java_class(spark, STORE)(conf)
    deltas = java_class(spark, "io.delta.storage.HDFSLogStore")(conf)
    starts = [f"{v:020d}" for v in range(12)] + ["0", "_", "_last_checkpoint", "z"]
    for start in starts:
        prefix = path(f"file:{log_folder}/{start}")
        expected = _statuses(deltas.listFrom(prefix, conf))
        assert _statuses(ours.listFrom(prefix, conf)) == expected, start
    # Not vacuous: listing from version 4 returns its commit, its checkpoint and everything after.
    from_four = [Path(p).name for p, *_ in _statuses(ours.listFrom(path(f"file:{log_folder}/{4:020d}"), conf))]
    assert f"{4:020d}.json" in from_four and f"{4:020d}.checkpoint.parquet" in from_four
    assert f"{10:020d}.json" in from_four and f"{3:020d}.json" not in from_four


def test_a_missing_log_folder_is_refused_as_delta_refuses_it(spark, tmp_path):
    log = delta_log(spark, str(tmp_path))
    conf = log.newDeltaHadoopConf()
    missing = java_class(spark, "org.apache.hadoop.fs.Path")(f"file:{tmp_path}/nothing/_delta_log/{0:020d}")
    store = java_class(spark, STORE)(conf)
    with pytest.raises(Exception, match="FileNotFoundException"):
        store.listFrom(missing, conf)


def test_time_travel_reads_through_the_store(spark, table_with_checkpoints):
    older = spark.read.format("delta").option("versionAsOf", 5).load(str(table_with_checkpoints))
    assert sorted(r.id for r in older.collect()) == list(range(5))
    assert spark.read.format("delta").load(str(table_with_checkpoints)).count() == 10
