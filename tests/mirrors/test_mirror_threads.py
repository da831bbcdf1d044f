"""Mirrors built and folded by several dbt threads at once, on real Spark/Delta and dbt.

A mirror's commit carries its cursor through a session setting
(macros/mirror/materialization/zync_mirror_commit_carrying.sql). Each dbt
thread runs on a session of its own (dbt_zync/thread_sessions.py), so with
`--threads 4` every base's commit still carries its own raw table's offsets,
never another mirror's. The raw tables here end at different offsets, so a
cursor written from another thread's setting would not match.
"""

from __future__ import annotations

import json
import queue
import threading

import pytest
from dbt.adapters.spark import session as dbt_spark_session

from dbt_zync import thread_sessions
from tests.mirrors.conftest import append_raw, change, drop_tables, mirror_project, rows

MIRRORS = 6
TOPICS = [f"mir_thr_{i}" for i in range(MIRRORS)]
MIRRORS_YML = "mirrors:\n" + "".join(
    f"  - model: mir_thr_{i}\n    topic: {TOPICS[i]}\n    table: mir_raw_thr_{i}\n" for i in range(MIRRORS))
TABLES = [t for i in range(MIRRORS) for t in (f"mir_raw_thr_{i}", f"mir_thr_{i}")]


def snapshot(i: int) -> list:
    """Mirror i's snapshot: keys 1..i+2 at offsets 0..i+1."""
    return [change(TOPICS[i], key - 1, "r", key, f"v{key}") for key in range(1, i + 3)]


def changes(i: int) -> list:
    """Mirror i's changes past its snapshot: key 1 updated 2*i+1 times, the last key deleted."""
    first = i + 2
    updates = [change(TOPICS[i], first + n, "u", 1, f"u{n}") for n in range(2 * i + 1)]
    return [*updates, change(TOPICS[i], first + 2 * i + 1, "d", i + 2)]


def last_cursor(spark, i: int) -> dict:
    commit = spark.sql(f"describe history zync.mir_thr_{i}__base").orderBy("version", ascending=False).first()
    return json.loads(commit["userMetadata"])["cursor"]


@pytest.fixture(scope="module")
def threaded(spark, tmp_path_factory):
    drop_tables(spark, *TABLES)
    project = mirror_project(tmp_path_factory.mktemp("mir_threads") / "project", {"mirrors.yml": MIRRORS_YML}, spark)
    for i in range(MIRRORS):
        append_raw(spark, f"mir_raw_thr_{i}", snapshot(i))
    yield project
    drop_tables(spark, *TABLES)


def test_mirrors_built_by_four_threads_each_carry_their_own_cursor(spark, threaded):
    run = threaded.dbt("run", "--select", "mir_thr_*", "--threads", "4")
    assert set(run.statuses().values()) == {"success"} and len(run.statuses()) == MIRRORS
    assert [last_cursor(spark, i) for i in range(MIRRORS)] == [{"0": i + 1} for i in range(MIRRORS)]


def test_mirrors_folded_by_four_threads_each_carry_their_own_cursor_and_rows(spark, threaded):
    for i in range(MIRRORS):
        append_raw(spark, f"mir_raw_thr_{i}", changes(i))
    run = threaded.dbt("run", "--select", "mir_thr_*", "--threads", "4")
    assert set(run.statuses().values()) == {"success"} and len(run.statuses()) == MIRRORS
    assert [last_cursor(spark, i) for i in range(MIRRORS)] == [{"0": 3 * i + 3} for i in range(MIRRORS)]
    for i in range(MIRRORS):
        kept = [(1, f"u{2 * i}")] + [(key, f"v{key}") for key in range(2, i + 2)]
        assert rows(spark, f"select ID, name from zync.mir_thr_{i} order by ID") == kept
        assert rows(spark, f"select ID, name from zync.mir_thr_{i}__base order by ID") == kept


def test_each_dbt_thread_sets_and_reads_its_own_session_setting(spark):
    """Two of dbt-spark's session cursors on two threads: a setting one writes is not the other's."""
    thread_sessions.install()
    thread_sessions.new_invocation()  # as the plugin does when a dbt command starts on this thread
    both_set, seen = threading.Barrier(2), {}

    def worker(value: str) -> None:
        cursor = dbt_spark_session.Connection().cursor()
        cursor.execute(f"set zync.test.thread = {value}")
        both_set.wait(timeout=60)
        cursor.execute("set zync.test.thread")
        seen[value] = cursor.fetchall()[0][1]

    workers = [threading.Thread(target=worker, args=(value,)) for value in ("first", "second")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert seen == {"first": "first", "second": "second"}
    assert spark.conf.get("zync.test.thread", None) is None  # the invoking thread's session is untouched


def test_a_thread_keeps_its_session_through_an_invocation_and_clones_anew_for_the_next(spark):
    """One dbt thread over two invocations: its own setting stays for the first; the second sees the
    engine's settings as they are then, and none of the first clone's."""
    thread_sessions.install()
    jobs: queue.Queue = queue.Queue()
    seen: list[tuple[str, str]] = []

    def run(sql: str) -> list:
        cursor = dbt_spark_session.Connection().cursor()  # one a statement, as dbt's (a cursor keeps its rows)
        cursor.execute(sql)
        return cursor.fetchall()

    def worker() -> None:
        while (job := jobs.get()) is not None:
            if job == "first":
                run("set zync.test.own = mine")
            seen.append((run("set zync.test.engine")[0][1], run("set zync.test.own")[0][1]))
            jobs.task_done()

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        for invocation, engine_value in (("first", "one"), ("second", "two")):
            spark.conf.set("zync.test.engine", engine_value)
            thread_sessions.new_invocation()
            jobs.put(invocation)
            jobs.join()
    finally:
        jobs.put(None)
        thread.join(timeout=60)
        spark.conf.unset("zync.test.engine")
    assert seen == [("one", "mine"), ("two", "<undefined>")]
