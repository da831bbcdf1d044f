"""Hadoop's file system for file: paths in the project's Spark settings (jvm/delta-log-listing,
zync.fs.ProcessFreeLocalFileSystem) sets permissions as Hadoop's own does, without a process.

Every Delta commit's checksum file, and every new table's folders, are created with permissions;
a file or folder left with other permissions than Hadoop would give could lock a reader or
another writer out. Compared here with Hadoop's RawLocalFileSystem on the same requests.
"""

from __future__ import annotations

import stat

import pytest

from zync.spark_internals import java_class, java_context

FILE_SYSTEM = "zync.fs.ProcessFreeLocalFileSystem"


def _path(spark, path) -> object:
    return java_class(spark, "org.apache.hadoop.fs.Path")(f"file:{path}")


@pytest.fixture(scope="module")
def file_systems(spark):
    conf = java_context(spark).hadoopConfiguration()
    ours = java_class(spark, "org.apache.hadoop.fs.FileSystem").get(
        java_class(spark, "java.net.URI")("file:///"), conf)
    hadoops = java_class(spark, "org.apache.hadoop.fs.RawLocalFileSystem")()
    hadoops.initialize(java_class(spark, "java.net.URI")("file:///"), conf)
    return ours, hadoops


def test_the_session_reads_and_writes_local_paths_with_it(file_systems):
    ours, _ = file_systems
    assert ours.getClass().getName() == FILE_SYSTEM


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o700, 0o644, 0o640, 0o600, 0o444, 0o000])
def test_permissions_are_set_as_hadoop_sets_them(spark, file_systems, tmp_path, mode):
    ours, hadoops = file_systems
    permission = java_class(spark, "org.apache.hadoop.fs.permission.FsPermission")(mode)
    made = {}
    for name, fs in (("ours", ours), ("hadoop", hadoops)):
        folder, file = tmp_path / f"{name}-folder" / "nested", tmp_path / f"{name}-file"
        assert fs.mkdirs(_path(spark, folder), permission)
        fs.create(_path(spark, file), permission, True, 4096, 1, 1 << 20, None).close()
        made[name] = (stat.S_IMODE(folder.stat().st_mode), stat.S_IMODE(file.stat().st_mode))
    assert made["ours"] == made["hadoop"]
    assert made["ours"][1] == mode  # not vacuous: the mode asked for, not a default


def test_a_file_written_through_it_reads_back_with_its_checksum(spark, file_systems, tmp_path):
    ours, _ = file_systems
    path = _path(spark, tmp_path / "data")
    stream = ours.create(path, True)
    stream.write(bytearray(b"zync" * 1000))
    stream.close()
    assert (tmp_path / ".data.crc").exists()  # LocalFileSystem's checksum, kept
    assert (tmp_path / "data").read_bytes() == b"zync" * 1000
    stream = ours.open(path)  # read through the checksum, verified
    assert bytes(java_class(spark, "org.apache.commons.io.IOUtils").toByteArray(stream)) == b"zync" * 1000
    stream.close()
