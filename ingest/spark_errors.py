"""The Java exceptions behind a PySpark error, so ingest can tell them apart by class.

PySpark raises Py4JJavaError (or one of its CapturedException classes) for a
failure in the JVM; what failed is a Java exception somewhere in its cause
chain: a Spark job's failure wraps the task's exception, a Delta write wraps
Delta's. Matching the chain's classes (py4j's is_instance_of) instead of the
text of the Python exception keeps the classification right when messages change.
"""

from __future__ import annotations

from collections.abc import Iterator

from py4j.java_gateway import JavaObject

from zync.spark_internals import is_java_instance, java_exception

MAX_DEPTH = 32  # a cause chain is short; this only guards against a cycle


def java_causes(e: BaseException) -> Iterator[JavaObject]:
    """The Java exception behind `e` and its causes, outermost first (none for a Python error)."""
    cause = java_exception(e)
    for _ in range(MAX_DEPTH):
        if cause is None:
            return
        yield cause
        cause = cause.getCause()


def caused_by(e: BaseException, java_class: str) -> JavaObject | None:
    """The first exception in `e`'s Java cause chain that is an instance of `java_class`, if any."""
    for cause in java_causes(e):
        if is_java_instance(cause, java_class):
            return cause
    return None
