"""How `zync run` warms its engine at the start: a few rows of its own, in a scratch folder beside the tables.

A new driver JVM pays class loading and code generation on its first Delta
write, MERGE and read: a fresh service would make its first change wait for
all of it. The first cycle pays it instead when it has nothing to read
(service/run.py), before the run says it is ready. Measured
(bench/first_output.py, docs/benchmarks.md): the first change after a fresh
start reaches the output ~5 s sooner. A restart onto existing tables gains
nothing from more (reading the tables' logs at the start already warms those
paths): running each output model once over nothing new and reading an
input's last message again were measured there too, and made the first
change no faster.
"""

from __future__ import annotations

import os

from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from zync import storage

WAREHOUSE = "spark.sql.warehouse.dir"
WARM_ROWS = 64


def _scratch_location(spark) -> str:
    """A folder of this process's own under the session's warehouse (hidden: no table is listed there)."""
    warehouse = spark.conf.get(WAREHOUSE).rstrip("/")
    return f"{warehouse}/.zync-warm-up-{os.getpid()}"


def _remove(location: str) -> None:
    """Remove the scratch folder, on this machine's file system or an object store (quietly: a failure
    leaves a few KB of a folder no table names)."""
    folder = storage.location(location)
    try:
        folder.filesystem.delete_dir(folder.path)
    except OSError:
        pass


def warm_engine(spark) -> None:
    """Delta's write, MERGE and read, a window over keys and from_avro, on a few rows of its own.

    What a new engine's first ingest, fold and model run would otherwise load and compile
    for the first time, while a change waits on them. The scratch folder is gone after,
    whether it worked or not.
    """
    location = _scratch_location(spark)
    try:
        rows = spark.range(WARM_ROWS).select(F.col("id"), (F.col("id") % 8).alias("k"),
                                             from_avro(F.lit(bytearray(b"\x02")), '"long"').alias("v"))
        rows.write.format("delta").mode("overwrite").save(location)
        table = f"delta.`{location}`"
        spark.sql(f"merge into {table} t using (select id, k, v + 1 as v from {table}) s on t.id = s.id "
                  "when matched then update set * when not matched then insert *")
        spark.sql(f"select k, v from (select k, v, row_number() over (partition by k order by id desc) as n "
                  f"from {table}) where n = 1").collect()
    finally:
        _remove(location)
