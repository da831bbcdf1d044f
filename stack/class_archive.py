"""The Spark driver's class-data archive (the JDK's AppCDS): a new driver starts seconds sooner.

Every new Spark driver (a zync verb, a hand-run `dbt`, `zync run` starting)
loads the same tens of thousands of classes (Spark SQL, Hive's metastore
client, DataNucleus, Delta) before its first statement. The JDK can map
them from an archive instead of loading them: `make setup` builds one here
(`python -m stack.class_archive`) by starting a driver with the `local`
profile's settings, a throw-away embedded metastore and warehouse, running
what every zync job does first (a Delta table created, appended to, read),
and letting the JVM write the classes it loaded when it exits
(`-XX:ArchiveClassesAtExit`). The profile's `spark.driver.extraJavaOptions`
points every driver at it (ARCHIVE_OPTION); a driver that finds no
archive, or one its JDK or class path no longer matches (the JVM checks
both), starts the usual way, silently (`-Xlog:cds=off`).

The archive is written under a temporary name and renamed only after the
JVM that wrote it exited cleanly: a JVM given a truncated archive crashes,
so only a whole one ever gets the name.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from zync.config import load_target, project_path
from zync.errors import ZyncError
from zync.spark_internals import driver_process

ARCHIVE = Path(".local") / "jsa" / "spark-driver.jsa"  # relative to the project root, as the profile names it
ARCHIVE_OPTION = "-XX:SharedArchiveFile="
QUIET_OPTIONS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
JVM_EXIT_TIMEOUT_S = 300.0


class ArchiveBuildError(ZyncError):
    """The training driver did not leave a whole class-data archive."""


def training_options(options: str, partial: Path) -> str:
    """The profile's driver JVM options with the archive to write in place of the one to read (and quiet:
    the JVM lists every class it cannot archive)."""
    kept = [o for o in options.split() if not o.startswith(ARCHIVE_OPTION) and o not in QUIET_OPTIONS]
    return " ".join([*kept, *QUIET_OPTIONS, f"-XX:ArchiveClassesAtExit={partial}"])


def train(conf: dict[str, str], scratch: Path) -> None:
    """Start a driver with `conf`, run a zync job's first statements, and wait for its JVM to exit."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("zync class archive").enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    builder = (builder
               .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
               .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                       f"jdbc:derby:;databaseName={scratch / 'metastore'};create=true")
               .config("spark.hadoop.javax.jdo.option.ConnectionDriverName", "org.apache.derby.jdbc.EmbeddedDriver"))
    spark = builder.getOrCreate()
    jvm = driver_process(spark)
    if jvm is None:
        raise ArchiveBuildError("the training Spark driver is not a JVM this process launched, so its exit "
                                "(when the archive is written) cannot be waited for")
    spark.sql("create database if not exists zync_archive")
    spark.sql("create table zync_archive.raw (kafka struct<topic: string, partition: int, offset: bigint>, "
              "value string) using delta partitioned by (value)")
    spark.createDataFrame([(("t", 0, 0), "v")], "kafka struct<topic: string, partition: int, offset: bigint>, "
                          "value string").write.format("delta").mode("append").saveAsTable("zync_archive.raw")
    spark.sql("insert into zync_archive.raw select named_struct('topic', 't', 'partition', 0, 'offset', "
              "max(kafka.offset) + 1), 'w' from zync_archive.raw").collect()
    spark.sql("select count(*), max(kafka.offset) from zync_archive.raw where kafka.offset >= 0").collect()
    spark.stop()
    jvm.stdin.close()  # PySpark's gateway JVM exits when its stdin closes, and writes the archive then
    status = jvm.wait(JVM_EXIT_TIMEOUT_S)
    if status != 0:
        raise ArchiveBuildError(f"the training Spark driver exited with status {status}")


def build(archive: Path) -> Path:
    """Write the class-data archive for the `local` target's driver to `archive`; return it."""
    target = load_target("local")
    conf = target.spark_conf
    partial = archive.with_name(archive.name + ".partial")
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial.unlink(missing_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="zync-class-archive-"))
    # The embedded metastore's log goes with it, not into the project folder.
    conf["spark.driver.extraJavaOptions"] = training_options(
        conf.get("spark.driver.extraJavaOptions", "") + f" -Dderby.stream.error.file={scratch / 'derby.log'}", partial)
    try:
        train(conf, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not partial.is_file() or partial.stat().st_size == 0:
        raise ArchiveBuildError(f"the training Spark driver wrote no archive at {partial}")
    partial.replace(archive)
    return archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stack.class_archive",
        description="Build the Spark driver's class-data archive (`make setup` runs this): new drivers start "
                    "seconds sooner. Safe to run again; a driver without it starts the usual way.")
    parser.parse_args(argv)
    archive = project_path(ARCHIVE)
    try:
        built = build(archive)
    except ZyncError as e:
        print(f"zync: {e}; drivers start without the archive (slower, nothing else changes)", file=sys.stderr)
        return 1
    print(f"class-data archive for the Spark driver: {built} ({built.stat().st_size / 2**20:,.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
