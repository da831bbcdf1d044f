"""A raw table's catalog entry, for a Delta table whose first commit ingest wrote itself.

A new raw table for a first batch written in Python is created by ingest's own Delta commit
(ingest/delta_append.py create_empty), then entered here in one catalog call, where Delta's CREATE
TABLE through the catalog made six and a Spark job. The entry is the one Delta's CREATE TABLE leaves:
a managed table of provider delta at the catalog's default location, its columns kept by Delta's
log alone. Delta's create also commits before it writes the catalog, so a crash between the two
leaves the same thing both ways: a table in the folder and no entry, which RawTable.exists adopts.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from zync.spark_internals import java_class, java_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession, name: str, location: str) -> None:
    """Enter the Delta table at `location` in the catalog as managed table `name` (quoted as SQL spells it).

    Raises what the catalog raises: TableAlreadyExistsException if the name is taken.
    """
    session = java_session(spark)
    state = session.sessionState()
    option = java_class(spark, "scala.Option")
    scala = java_class(spark, "org.apache.spark.api.python.PythonUtils")
    empty_map = scala.toScalaMap({})
    storage = java_class(spark, "org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat")(
        option.apply(java_class(spark, "org.apache.hadoop.fs.Path")(location).toUri()),
        option.empty(), option.empty(), option.empty(),
        False, empty_map)
    table = java_class(spark, "org.apache.spark.sql.catalyst.catalog.CatalogTable")(
        state.sqlParser().parseTableIdentifier(name),
        java_class(spark, "org.apache.spark.sql.catalyst.catalog.CatalogTableType").MANAGED(),
        storage,
        java_class(spark, "org.apache.spark.sql.types.StructType")(),  # the columns are the log's
        option.apply("delta"),
        scala.toSeq([]),  # partition columns
        option.empty(),  # buckets
        str(session.sparkContext().sparkUser()),
        int(time.time() * 1000),  # created
        -1,  # last access: unknown
        str(session.version()),
        empty_map,  # properties: the log's
        option.empty(), option.empty(), option.empty(),  # statistics, view text, comment
        scala.toSeq([]),  # unsupported features
        True,  # partitions tracked by the catalog, as Delta's create sets it
        True,  # schema preserves case
        empty_map,  # ignored properties
        option.empty(),  # view's original text
    )
    # validateLocation False: the folder holds the table already, as when Delta's create writes the entry.
    state.catalog().createTable(table, False, False)
