"""The private PySpark attributes zync relies on, each behind a function that says why.

PySpark wraps only part of what the JVM holds: Delta's Scala API (its log, its tables),
the driver JVM's process and memory, and the Java exceptions behind a failed job are
reached through PySpark's py4j handles. They are private and may change in any PySpark
release; keeping every use here makes such a change one module's to follow. PySpark is
imported where it is used, so importing this module costs nothing to a command that starts no Spark.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

    from py4j.java_gateway import JavaClass, JavaObject, JVMView
    from pyspark import SparkContext
    from pyspark.sql import Column, DataFrame, SparkSession


def jvm_of(spark: SparkSession | SparkContext) -> JVMView:
    """The driver JVM's classes, for what PySpark does not wrap: Delta's Scala API (delta-spark's
    Python package is not installed), the JVM's own memory figures, the JVM side of PySpark's
    private channels (PythonRDD, PythonSQLUtils)."""
    return spark._jvm


# The JVM classes PySpark names by their short names on every call (pyspark.sql.functions, Column,
# DataFrame, SparkSession): imported one by one, py4j finds each at once, where through PySpark's
# package-wide imports it first tries each package that lacks it (see `java_class`).
_NAMED_PER_CALL = ("org.apache.spark.sql.functions", "org.apache.spark.sql.SparkSession",
                   "org.apache.spark.api.python.PythonUtils", "org.apache.spark.sql.api.python.PythonSQLUtils")
_imported: set[int] = set()


def java_class(spark: SparkSession | SparkContext, name: str) -> JavaClass:
    """A JVM class by its full name, reached without py4j's walk through its packages.

    `jvm.org.apache.spark...` asks the JVM, at each dot, whether the name so far is a class, and
    every miss searches each of the ~250 jars on the driver's class path (~1 ms). A small ingest
    batch made ~100 such lookups, a fifth of the driver's time (Java Flight Recorder, 40 tables).
    """
    client = jvm_of(spark)._gateway_client
    found = _classes.get((client, name))
    if found is None:
        found = _classes[(client, name)] = _method_keeping_class()(name, client)
    return found


# The classes java_class gave, by gateway and name: each keeps the static methods it found.
_classes: dict[tuple[object, str], JavaClass] = {}


@functools.cache
def _method_keeping_class() -> type:
    """py4j's JavaClass asks the JVM what a name is at every `Class.method` (a round trip before the
    call's own): a commit of a raw pool's batch made some twenty, a tenth of its time on a busy
    2-core machine (a profile of bench/wide.py). A static method stays one, so it is asked once;
    fields (whose values may change) and nested classes are asked each time, as py4j does."""
    from py4j.java_gateway import JavaClass, JavaMember

    class MethodKeepingClass(JavaClass):
        def __getattr__(self, name: str):
            found = super().__getattr__(name)
            if isinstance(found, JavaMember):
                self.__dict__[name] = found
            return found

    return MethodKeepingClass


def import_named_per_call(spark: SparkSession) -> None:
    """Import the classes PySpark names on every call into the gateway's view, once per gateway."""
    from py4j.java_gateway import java_import

    jvm = jvm_of(spark)
    if id(jvm) in _imported:
        return
    for name in _NAMED_PER_CALL:
        java_import(jvm, name)
    _imported.add(id(jvm))


def java_session(spark: SparkSession) -> JavaObject:
    """The JVM's SparkSession behind `spark`: Delta's Scala API and the JVM's per-thread active
    session take it, not the Python one."""
    return spark._jsparkSession


def java_context(spark: SparkSession) -> JavaObject:
    """The JVM's JavaSparkContext: Spark's status store (jobs and stages as Spark counts them) and
    the Hadoop configuration the Parquet writers read are only there."""
    return spark.sparkContext._jsc


def java_frame(frame: DataFrame) -> JavaObject:
    """The JVM's Dataset behind `frame`: its query plan, and its Arrow batches partition by partition,
    which PySpark 3.5 has no public API for."""
    return frame._jdf


def java_column(column: Column) -> JavaObject:
    """The JVM's Column behind `column`, for Delta's Scala API (a delete's condition)."""
    return column._jc


def delta_tables(spark: SparkSession) -> JavaClass:
    """Delta's Scala `io.delta.tables.DeltaTable`, as delta-spark's Python package (not installed) wraps it."""
    return java_class(spark, "io.delta.tables.DeltaTable")


def delta_log(spark: SparkSession, location: str) -> JavaObject:
    """The Delta log of the table at `location`: its versions, transactions and commits' actions
    are read without a Spark job, which no public API offers."""
    return java_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(java_session(spark), location)


def python_frame(spark: SparkSession, dataset: JavaObject) -> DataFrame:
    """A Python DataFrame over a JVM Dataset that Delta's Scala API returned (a snapshot's files),
    which PySpark has no public constructor for."""
    from pyspark.sql import DataFrame

    return DataFrame(dataset.toDF(), spark)


def latest_snapshot(spark: SparkSession, log: JavaObject) -> JavaObject:
    """The log's newest snapshot. `DeltaLog.update` is Scala with default arguments, which py4j
    cannot leave out: it is given Scala's None for both optional ones."""
    empty = java_class(spark, "scala.Option").empty()
    return log.update(False, empty, empty)


def catalog_table_names(spark: SparkSession, database: str) -> frozenset[str]:
    """The names of the tables and views in a database of the catalog (lower case, as the metastore
    keeps them); empty if the database is not there.

    One metastore call however many tables there are, asked of the external catalog: PySpark's
    `Catalog.listTables` loads each table's metadata, a metastore call a table.
    """
    catalog = java_session(spark).sessionState().catalog().externalCatalog()
    try:
        names = str(catalog.listTables(database).mkString("\n"))
    except Exception as e:  # noqa: BLE001 - PySpark turns the Java error into its own
        cause = java_exception(e)
        if cause is not None and is_java_instance(cause, "org.apache.spark.sql.catalyst.analysis.NoSuchDatabaseException"):
            return frozenset()
        raise
    return frozenset(name.lower() for name in names.split("\n") if name)


def driver_process(spark: SparkSession) -> subprocess.Popen | None:
    """The Popen of the driver JVM this process launched (its pid, whether it exited, its stdin),
    which PySpark keeps on its gateway; None for a JVM this process did not launch."""
    return getattr(spark.sparkContext._gateway, "proc", None)


def is_java_instance(java_object: JavaObject, java_class: str) -> bool:
    """Whether a Java object (an exception in a failed job's cause chain) is an instance of
    `java_class`: only the JVM can tell, asked through the gateway PySpark launched it with."""
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext

    return is_instance_of(SparkContext._gateway, java_object, java_class)


def java_exception(e: BaseException) -> JavaObject | None:
    """The Java exception a PySpark error stands for (None for a Python error): a
    CapturedException keeps it only as a private attribute."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    if isinstance(e, Py4JJavaError):
        return e.java_exception
    if isinstance(e, PySparkException):
        return getattr(e, "_origin", None)
    return None


def context_running() -> bool:
    """Whether this process has a SparkContext, for code that may join a session another thread
    made (a test's, dbt's) but must not start Spark itself."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def instantiated_session() -> SparkSession | None:
    """The session PySpark's builder would return, read without asking the builder: getOrCreate
    re-applies every setting any builder of the process was given, a Java call per setting."""
    from pyspark.sql import SparkSession

    return SparkSession._instantiatedSession


def session_stopped(spark: SparkSession) -> bool:
    """Whether `spark` was stopped: stop() clears its context's Java handle, and PySpark has no
    public way to ask."""
    return spark.sparkContext._jsc is None


def clone_session(spark: SparkSession) -> SparkSession:
    """A new session on `spark`'s context with a copy of its settings and temporary views: the JVM's
    cloneSession, private to Spark's sql package in Scala, public in its bytecode."""
    from pyspark.sql import SparkSession

    return SparkSession(spark.sparkContext, java_session(spark).cloneSession())


def java_array(spark: SparkSession, element_type: JavaClass, length: int) -> JavaObject:
    """A new JVM array of `length` elements of `element_type` (e.g. `jvm_of(spark).double`), for a
    Java method that takes one: py4j makes arrays only through the gateway, which PySpark keeps private."""
    return spark.sparkContext._gateway.new_array(element_type, length)
