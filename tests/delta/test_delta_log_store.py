"""The log store Spark uses for tables in local folders (jvm/delta-log-listing) lists what Delta's own
does, and writes a version once.

Every read and commit of a Delta table lists its _delta_log from a version on,
so a listing that missed a commit would hide data from a reader and a racing
writer from Delta's conflict check. These compare the store, file by file,
with Delta's HDFSLogStore on a real table's log: commits, checksums,
checkpoints, Hadoop's hidden .crc files and the _last_checkpoint file.

A commit is a version's file, written only if no writer wrote that version:
the check Delta's conflict detection rests on. The store's write is checked
against Delta's own reader, and with writers racing for one version.
"""

from __future__ import annotations

import threading
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


def _write(spark, store, conf, path: str, lines: list[str], overwrite: bool = False) -> None:
    actions = java_class(spark, "java.util.ArrayList")()
    for line in lines:
        actions.add(line)
    store.write(java_class(spark, "org.apache.hadoop.fs.Path")(f"file:{path}"), actions.iterator(), overwrite, conf)


@pytest.fixture
def log_folder(spark, tmp_path):
    folder = tmp_path / "_delta_log"
    folder.mkdir()
    conf = delta_log(spark, str(tmp_path)).newDeltaHadoopConf()
    return folder, java_class(spark, STORE)(conf), conf


def test_a_version_is_written_whole_for_deltas_reader(spark, log_folder):
    folder, store, conf = log_folder
    lines = ['{"commitInfo":{"operation":"WRITE"}}', '{"add":{"path":"part-0.parquet","dataChange":true}}']
    _write(spark, store, conf, f"{folder}/{1:020d}.json", lines)
    assert (folder / f"{1:020d}.json").read_text() == "".join(line + "\n" for line in lines)
    deltas = java_class(spark, "io.delta.storage.HDFSLogStore")(conf)
    read = deltas.read(java_class(spark, "org.apache.hadoop.fs.Path")(f"file:{folder}/{1:020d}.json"), conf)
    read_lines = []
    while read.hasNext():
        read_lines.append(read.next())
    read.close()
    assert read_lines == lines
    # No temporary file is left beside it for a listing or VACUUM to meet.
    assert [p.name for p in folder.iterdir()] == [f"{1:020d}.json"]


def test_a_version_written_twice_is_refused_and_the_first_kept(spark, log_folder):
    folder, store, conf = log_folder
    version = f"{folder}/{3:020d}.json"
    _write(spark, store, conf, version, ['{"first":1}'])
    with pytest.raises(Exception, match="java.nio.file.FileAlreadyExistsException"):
        _write(spark, store, conf, version, ['{"second":2}'])
    assert Path(version).read_text() == '{"first":1}\n'
    assert [p.name for p in folder.iterdir()] == [f"{3:020d}.json"]


def test_an_overwrite_replaces_the_file(spark, log_folder):
    folder, store, conf = log_folder
    last_checkpoint = f"{folder}/_last_checkpoint"
    _write(spark, store, conf, last_checkpoint, ['{"version":10}'], overwrite=True)
    _write(spark, store, conf, last_checkpoint, ['{"version":20}'], overwrite=True)
    assert Path(last_checkpoint).read_text() == '{"version":20}\n'
    assert [p.name for p in folder.iterdir()] == ["_last_checkpoint"]


def test_of_writers_racing_for_one_version_exactly_one_wins(spark, log_folder):
    folder, store, conf = log_folder
    version = f"{folder}/{7:020d}.json"
    start, won, refused, failed = threading.Barrier(8), [], [], []

    def commit(writer: int) -> None:
        start.wait()
        try:
            _write(spark, store, conf, version, [f'{{"writer":{writer}}}'] * 50)
            won.append(writer)
        except Exception as e:  # noqa: BLE001 - sorted below
            (refused if "FileAlreadyExistsException" in str(e) else failed).append(e)

    threads = [threading.Thread(target=commit, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failed == [] and len(won) == 1 and len(refused) == 7
    assert Path(version).read_text() == f'{{"writer":{won[0]}}}\n' * 50
    assert [p.name for p in folder.iterdir()] == [f"{7:020d}.json"]
