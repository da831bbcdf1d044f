"""The stop signals of `zync run` (service/stop_signals.py), in this process: a SIGTERM sent to it is
a request to stop, and a JVM ended by a stop signal is a stop, not a crash, only when one came."""

import logging
import os
import signal
import threading
import time

from service.stop_signals import PY4J_SEND_FAILED, StopSignals, stopped_with_the_engine


def test_a_sigterm_is_a_request_to_stop_and_quiets_py4j_after_it():
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    root = logging.getLogger()
    handler = Keep()
    root.addHandler(handler)
    try:
        with StopSignals() as stop:
            root.error(PY4J_SEND_FAILED)  # before a stop: a JVM failing on its own is reported
            os.kill(os.getpid(), signal.SIGTERM)
            assert stop.requested.wait(5)
            root.error(PY4J_SEND_FAILED)
            root.error("something else")
        assert records == [PY4J_SEND_FAILED, "something else"]
        assert signal.getsignal(signal.SIGTERM) is not stop._received  # handlers put back
    finally:
        root.removeHandler(handler)
        root.removeFilter(stop._quiet_after_stop)


def test_an_engine_ended_by_a_stop_signal_is_a_stop_once_this_process_got_it_too():
    requested = threading.Event()
    # The JVM's handler ran first (exit 143: SIGTERM): this process's comes a moment later.
    threading.Timer(0.2, requested.set).start()
    assert stopped_with_the_engine(requested, 143)


def test_an_engine_killed_otherwise_is_not_a_stop():
    requested = threading.Event()
    started = time.monotonic()
    assert not stopped_with_the_engine(requested, -9)  # kill -9 of the JVM alone: a crash
    assert not stopped_with_the_engine(requested, 1)
    assert time.monotonic() - started < 0.5  # no wait for a signal that is not coming
    # SIGTERM to the JVM alone (nobody asked the run to stop) stays a crash too, after the grace.
    assert not stopped_with_the_engine(requested, 143)
