"""Each dbt thread its own Spark session on the one engine (dbt-spark's `session` method).

dbt-spark's session cursor runs every statement on `SparkSession.builder.getOrCreate()`,
which is the process's one session whatever the thread. But a session's
settings are state a model's run writes and reads back: a mirror's commit
carries its cursor in `spark.databricks.delta.commitInfo.userMetadata`
(macros/mirror/materialization/zync_mirror_commit_carrying.sql), a model's
render leaves notes for its materialization (macros/admin/zync_leave_note.sql),
and the temporary views a run makes are the session's too. With `threads`
above 1, two models running at once on one session would write their commits
with each other's cursors.

So the thread that invokes dbt keeps the engine's session, and each of dbt's
model threads runs on a clone of it, made at its first statement of the
invocation (Spark's `cloneSession`: the settings, functions, current database
and temporary views as they are then, over the same SparkContext, catalog and
cache). A clone lives for one invocation: `zync run` changes its session's
settings between invocations (adaptive execution, code generation), and the
next invocation's threads clone them anew. A Thrift target needs none of
this: each of its connections is a session of the Thrift Server's own.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from dbt.adapters.spark import session as dbt_spark_session
from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import SparkSession
from pyspark.sql.utils import AnalysisException

from zync.spark_internals import clone_session, instantiated_session, session_stopped

_invocations = itertools.count(1)
_invocation = 0  # the dbt invocation sessions are cloned for
_invoking_thread: int | None = None  # the thread that invoked it: it runs on the engine's session
_lock = threading.Lock()
_thread = threading.local()  # .invocation, .session, .engine: this thread's clone, its invocation and engine


def new_invocation() -> None:
    """A dbt invocation starts on this thread: model threads clone the engine's session afresh."""
    global _invocation, _invoking_thread
    with _lock:
        _invocation = next(_invocations)
        _invoking_thread = threading.get_ident()


def engine_session(server_side_parameters: dict[str, Any]) -> SparkSession:
    """The process's session, as dbt-spark gets it: made with the profile's settings if there is none."""
    builder = SparkSession.builder.enableHiveSupport()
    for parameter, value in server_side_parameters.items():
        builder = builder.config(parameter, value)
    return builder.getOrCreate()


def thread_session(server_side_parameters: dict[str, Any]) -> SparkSession:
    """The session this thread's statements run on in the current dbt invocation."""
    invoking = threading.get_ident() == _invoking_thread
    if not invoking and getattr(_thread, "invocation", None) == _invocation \
            and _thread.engine is instantiated_session() and not session_stopped(_thread.engine):
        # The clone is current: the builder is not asked again. PySpark's getOrCreate re-applies
        # every setting any builder of the process was given, a Java call per setting (a fifth of
        # a model thread's Python time in a first build of many mirrors), at every statement.
        return _thread.session
    engine = engine_session(server_side_parameters)
    if invoking:
        return engine
    _thread.session = clone_session(engine)
    _thread.engine, _thread.invocation = engine, _invocation
    return _thread.session


class ThreadSessionCursor(dbt_spark_session.Cursor):
    """dbt-spark's session cursor, its statements on this thread's session (thread_session)."""

    def execute(self, sql: str, *parameters: Any) -> None:
        if len(parameters) > 0:
            sql = sql % parameters  # as dbt-spark's own: it does not format statements
        try:
            self._df = thread_session(self.server_side_parameters).sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc


def install() -> None:
    """dbt-spark's session connections make their cursors from this module's class from now on."""
    dbt_spark_session.Cursor = ThreadSessionCursor
