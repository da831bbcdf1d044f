"""Delta commits on the S3 server, with several writers: one claim of a version wins, a claimed
commit whose writer died is published by the next reader, a table made again in a removed table's
folder commits afresh (jvm/delta-commits, docs/object-storage.md).

Tables are given by their s3a:// location on the suite's S3 server; the claims are in the suite's
catalog database, as every process of the suite reaches it.
"""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from tests.conftest import ROOT
from zync import storage
from zync.delta_metadata import history, history_from_files
from zync.spark_internals import jvm_of

COMMITS_TABLE = "ZYNC_DELTA_COMMITS"


@pytest.fixture
def location(object_store) -> str:
    return f"{object_store}/commits-{uuid.uuid4().hex[:8]}"


def _versions(location: str) -> list[int]:
    log = storage.location(location).child("_delta_log")
    return sorted(int(e.name[:-5]) for e in log.entries() if e.name.endswith(".json"))


def _forget_snapshots(spark) -> None:
    """Make this engine read the table's log again, as a new process would."""
    jvm_of(spark).org.apache.spark.sql.delta.DeltaLog.clearCache()


def _claims(spark, sql: str, *values: str) -> int:
    """Run `sql` on the claims' table over JDBC, as the log store does; the rows it changed."""
    url = spark.conf.get("spark.hadoop.javax.jdo.option.ConnectionURL")
    connection = jvm_of(spark).java.sql.DriverManager.getConnection(url)
    try:
        statement = connection.prepareStatement(sql)
        for i, value in enumerate(values, start=1):
            statement.setString(i, value)
        return statement.executeUpdate()
    finally:
        connection.close()


def test_two_writer_processes_appending_to_one_table_lose_no_commit(spark, location):
    """Two processes append 8 rows each, one commit a row, at once: every row is there, in 17
    contiguous versions (Delta's own S3 store lets the second PUT of a version replace the first)."""
    spark.createDataFrame([("seed",)], "row string").write.format("delta").save(location)
    writers = [subprocess.Popen([sys.executable, "-m", "tests.object_storage.appender", location, "8", tag],
                                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for tag in ("a", "b")]
    try:
        for writer in writers:
            assert writer.stdout.readline().strip() == "ready", writer.stderr.read()[-3000:]
        for writer in writers:
            writer.stdin.write("go\n")
            writer.stdin.flush()
        for writer in writers:
            out, err = writer.communicate(timeout=600)
            assert writer.returncode == 0 and out.strip() == "done", err[-3000:]
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
    _forget_snapshots(spark)
    rows = sorted(r.row for r in spark.read.format("delta").load(location).collect())
    assert rows == sorted(["seed", *(f"{tag}-{i}" for tag in "ab" for i in range(8))])
    assert _versions(location) == list(range(17))


def test_a_commit_claimed_by_a_writer_that_died_is_published_by_the_next_reader(spark, location):
    spark.range(3).write.format("delta").save(location)
    spark.range(3, 5).write.format("delta").mode("append").save(location)
    log = storage.location(location).child("_delta_log")
    commit = log.child(f"{1:020d}.json")
    # The writer wrote its content and claimed version 1, then died before publishing it.
    temp = log.child(".tmp", f"{1:020d}.json.{uuid.uuid4()}")
    temp.write_bytes(commit.read_bytes())
    commit.filesystem.delete_file(commit.path)
    log_uri = location.rstrip("/") + "/_delta_log"
    assert _claims(spark, f"update {COMMITS_TABLE} set PUBLISHED = 0, TEMP_PATH = ? "
                          "where TABLE_PATH = ? and FILE_NAME = ?", temp.uri, log_uri, f"{1:020d}.json") == 1
    _forget_snapshots(spark)
    assert sorted(r.id for r in spark.read.format("delta").load(location).collect()) == [0, 1, 2, 3, 4]
    assert commit.exists()
    # Published, the next commit takes version 2.
    spark.range(5, 6).write.format("delta").mode("append").save(location)
    assert _versions(location) == [0, 1, 2]


def test_a_table_made_again_in_a_removed_tables_folder_commits_afresh(spark, location):
    spark.range(3).write.format("delta").save(location)
    spark.range(3).write.format("delta").mode("append").save(location)
    folder = storage.location(location)
    folder.filesystem.delete_dir(folder.path)
    _forget_snapshots(spark)
    spark.range(10, 12).write.format("delta").save(location)
    spark.range(12, 13).write.format("delta").mode("append").save(location)
    assert sorted(r.id for r in spark.read.format("delta").load(location).collect()) == [10, 11, 12]
    assert _versions(location) == [0, 1]


def test_the_history_read_from_commit_files_on_s3_is_describe_historys(spark, location):
    spark.range(3).write.format("delta").save(location)
    spark.range(3).write.format("delta").mode("append").option("userMetadata", "note").save(location)
    described = history(spark, f"delta.`{location}`", 10)
    from_files = history_from_files(location, 10)
    assert [(e.version, e.operation, e.user_metadata) for e in from_files] == \
        [(e.version, e.operation, e.user_metadata) for e in described] == \
        [(1, "WRITE", "note"), (0, "WRITE", None)]
    for found, expected in zip(from_files, described):
        assert abs(found.timestamp.timestamp() - expected.timestamp.timestamp()) < 1.0, (found, expected)
