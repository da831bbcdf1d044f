"""The writer pipeline of ingest: one commit in flight, in order, errors surface on the next hand-over."""

import threading
import time

import pytest

from ingest.pipeline import OneInFlight


def test_jobs_run_one_at_a_time_in_submission_order():
    done, running, overlaps = [], [], []
    lock = threading.Lock()

    def job(n):
        with lock:
            running.append(n)
            if len(running) > 1:
                overlaps.append(tuple(running))
        time.sleep(0.02)
        with lock:
            running.remove(n)
        done.append(n)

    writer = OneInFlight()
    for n in range(5):
        writer.submit(job, n)
    writer.wait()
    writer.close()
    assert done == [0, 1, 2, 3, 4]
    assert overlaps == []


def test_submit_returns_while_the_job_runs_so_the_caller_keeps_reading():
    release = threading.Event()
    writer = OneInFlight()
    writer.submit(release.wait, 5)
    assert writer.busy  # the caller got control back before the job ended
    release.set()
    writer.wait()
    assert not writer.busy
    writer.close()


def test_a_failed_commit_stops_the_next_hand_over_and_the_next_job_never_runs():
    ran = []

    def fail():
        raise RuntimeError("commit 1 failed")

    writer = OneInFlight()
    writer.submit(fail)
    with pytest.raises(RuntimeError, match="commit 1 failed"):
        writer.submit(ran.append, 2)
    writer.wait()  # the error is raised once, not again
    writer.close()
    assert ran == []
