"""A Spark driver of this project maps the class-data archive `make setup` builds (stack/class_archive.py).

The archive is only an optimisation (a driver without it starts the usual way, silently), so
nothing else would notice it missing or no longer matching the driver's class path: this does.
"""

from __future__ import annotations

from pathlib import Path

from stack.class_archive import ARCHIVE, ARCHIVE_OPTION, QUIET_OPTIONS, training_options
from zync.config import project_path
from zync.spark_internals import driver_process


def test_the_session_driver_maps_the_archive_make_setup_built(spark):
    archive = project_path(ARCHIVE).resolve()
    assert archive.is_file(), f"`make setup` builds {archive} (python -m stack.class_archive)"
    driver = driver_process(spark).pid
    mapped = {line.split()[-1] for line in Path(f"/proc/{driver}/maps").read_text().splitlines()
              if len(line.split()) >= 6}
    assert str(archive) in mapped, "the driver JVM started without the class-data archive"


def test_the_training_driver_writes_the_archive_instead_of_reading_it():
    options = f"-Dlog4j.configurationFile=/p/jvm/log4j2.properties {ARCHIVE_OPTION}/p/a.jsa {' '.join(QUIET_OPTIONS)}"
    trained = training_options(options, Path("/p/a.jsa.partial")).split()
    assert trained[0] == "-Dlog4j.configurationFile=/p/jvm/log4j2.properties"
    assert not any(o.startswith(ARCHIVE_OPTION) for o in trained)
    assert trained.count("-Xlog:cds=off") == 1
    assert trained[-1] == "-XX:ArchiveClassesAtExit=/p/a.jsa.partial"
