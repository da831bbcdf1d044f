"""Egresses of one topic on different machines take turns by a lease in the catalog's database.

Each process here takes turns by the file locks of a folder of its own, so the file lock cannot
coordinate them, as on two machines; the lease (egress/lease.py, zync.delta.EgressLease) in the
test session's catalog database must. Real broker, registry, Derby network server and Spark.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from egress.lease import TTL_ENV, EgressBusyError, EgressLeaseLostError, Leases, lease_key, take
from egress.to_kafka import Egress
from tests.egress.helpers import out_rows, published, write_output_table
from zync import kafka_client

ROOT = Path(__file__).resolve().parents[2]
KEY = "struct<id:bigint>"
VALUE = "struct<id:bigint,name:string,amount:double>"


@pytest.fixture
def leases(spark) -> Leases:
    return Leases(spark)


def _cluster() -> str:
    """A Kafka cluster id of the test's own, so that each test's leases are fresh."""
    return f"test-{uuid.uuid4().hex[:8]}"


def _process(*args: str, lock_dir: Path, **env: str) -> subprocess.Popen:
    lock_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "tests.egress.egress_process", *args], cwd=ROOT,
                            env={**os.environ, "ZYNC_EGRESS_LOCK_DIR": str(lock_dir), **env},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _end(process: subprocess.Popen) -> None:
    """Kill what is left of a helper process and its Spark JVM."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(30)


def test_two_holders_take_turns_and_a_holder_that_stops_renewing_is_fenced(leases, tmp_path):
    cluster = _cluster()
    first = take(leases, "Out", cluster, tmp_path / "a" / "out.lock", time.monotonic() + 5, None, ttl_s=2.0)
    try:
        # Another machine's egress (another lock file): it waits, and gives up naming the holder. It
        # waits longer than the TTL: the heartbeat keeps the lease.
        with pytest.raises(EgressBusyError, match=rf"another egress of Out holds the topic's lease "
                                                  rf"\(\S+ pid {os.getpid()}, renewed \d+ s ago\)"):
            take(leases, "Out", cluster, tmp_path / "b" / "out.lock", time.monotonic() + 3.5, None, ttl_s=2.0)
        assert first.held()
        stop = threading.Event()
        stop.set()
        with pytest.raises(EgressBusyError):  # a stopping egress does not wait its turn out
            take(leases, "Out", cluster, tmp_path / "b" / "out.lock", time.monotonic() + 60, stop, ttl_s=2.0)

        # A waiting egress gets the lease as soon as the first gives it back.
        got = []
        waiter = threading.Thread(target=lambda: got.append(
            take(leases, "Out", cluster, tmp_path / "b" / "out.lock", time.monotonic() + 30, None, ttl_s=2.0)))
        waiter.start()
        time.sleep(1.0)
        assert not got
        first.release()
        waiter.join(10)
        second = got[0]
        assert second.held() and leases.holder(second.key)[0] == second.owner
        assert not leases.renew(first.key, first.owner)  # the first's lease is gone for good
    finally:
        first.release()

    # A holder that stops renewing (a paused process) stops counting its lease held before the
    # lease can be taken from it: the taker waits a TTL from when it first saw the last renewal.
    second._stop.set()
    second._thread.join(5)
    while second.held():
        time.sleep(0.01)
    lapsed = time.monotonic()
    third = take(leases, "Out", cluster, tmp_path / "c" / "out.lock", time.monotonic() + 10, None, ttl_s=2.0)
    taken = time.monotonic()
    try:
        assert taken - lapsed >= 0.2 * 2.0 - 0.05, "the lease was taken while its holder still counted it held"
        assert not leases.renew(second.key, second.owner)  # the paused holder's next renewal finds it taken
        assert not leases.release(second.key, second.owner)  # and its release takes nothing from the third
        assert leases.holder(third.key)[0] == third.owner
    finally:
        third.release()
    assert leases.holder(third.key) is None


def test_a_lease_whose_holder_is_killed_is_taken_after_the_holders_ttl(spark, leases, tmp_path):
    """A holder process (TTL 2 s) killed with -9: another machine's egress (its own TTL the default
    30 s) takes the lease once it has seen it unrenewed for the holder's TTL."""
    cluster, topic = _cluster(), "Killed"
    holder = _process("hold", topic, cluster, lock_dir=tmp_path / "holder", **{TTL_ENV: "2"})
    lock = tmp_path / "mine" / "killed.lock"
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()[-3000:]
        with pytest.raises(EgressBusyError, match=r"renewed \d+ s ago"):  # alive, it renews past its TTL
            take(leases, topic, cluster, lock, time.monotonic() + 4, None)
        holder.send_signal(signal.SIGKILL)  # the Python process that renews it
        holder.wait(10)
        killed = time.monotonic()
        lease = take(leases, topic, cluster, lock, time.monotonic() + 30, None)
        waited = time.monotonic() - killed
        lease.release()
    finally:
        _end(holder)
    assert waited <= 2.0 + 2.0, f"took {waited:.1f} s to take a lease of 2 s TTL from a dead holder"


def test_a_dead_holder_of_this_machines_lock_leaves_its_lease_at_once(target, leases, tmp_path, monkeypatch):
    """A holder killed with -9 that took turns by the same file lock: its successor, holding that
    lock now, takes its lease at once instead of waiting its TTL out (a restarted `zync run`)."""
    from egress.to_kafka import LOCK_DIR_ENV, topic_turn

    cluster, topic = _cluster(), "Restarted"
    lock_dir = tmp_path / "shared"
    holder = _process("hold", topic, cluster, lock_dir=lock_dir)  # the default TTL: 30 s
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()[-3000:]
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        started = time.monotonic()
        monkeypatch.setenv(LOCK_DIR_ENV, str(lock_dir))
        with topic_turn(str(target.kafka["bootstrap.servers"]), topic, wait_s=10, leases=leases,
                        cluster=cluster) as turn:
            assert turn.held()
            assert leases.holder(turn.lease.key)[0] == turn.lease.owner
    finally:
        _end(holder)
    assert time.monotonic() - started < 5


def test_two_egress_processes_with_their_own_lock_folders_publish_each_record_once(target, spark, tmp_path):
    """Two egress processes of one output table, each with a lock folder of its own (as on two
    machines), start their passes at the same moment: every row is published once, in order."""
    topic, table, rows = "egress_Machines", "egress_machines", 3000
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [
        ({"id": i}, {"id": i, "name": "x", "amount": float(i)}, None) for i in range(rows)]))
    processes = [_process("publish", table, "250", lock_dir=tmp_path / name) for name in ("one", "two")]
    try:
        for process in processes:
            assert process.stdout.readline().strip() == "ready", process.stderr.read()[-3000:]
        for process in processes:
            process.stdin.write("go\n")
            process.stdin.flush()
        counts = []
        for process in processes:
            out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err[-3000:]
            counts.append(int(out.strip()))
    finally:
        for process in processes:
            _end(process)
    assert sorted(counts) == [0, rows]  # one published them all, the other found nothing past its mark
    assert kafka_client.high_water_marks(target, topic) == {0: rows}
    found = [(r["kafka"]["offset"], r["key"]["id"]) for r in published(target, topic)]
    assert found == [(i, i) for i in range(rows)]  # 0 duplicated, 0 missing, each at its row's offset


def test_a_pass_that_loses_its_lease_stops_producing_before_its_next_record(target, spark, leases, monkeypatch):
    """Mid-pass, another egress takes the lease (as from a holder paused past its TTL): the pass's
    next renewal finds it taken, and the pass produces nothing more; once the other gives it back, a
    pass publishes the rest, each record once."""
    monkeypatch.setenv(TTL_ENV, "2")  # renewed every 0.5 s
    topic, table = "egress_Fenced", "egress_fenced"
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [
        ({"id": i}, {"id": i, "name": "x", "amount": 0.0}, None) for i in range(8)]))
    other = "another machine pid 1 [0.0]"

    class TakenOverMidPass(Egress):
        def _batches(self, encoded, pending):
            batches = super()._batches(encoded, pending)
            yield next(batches)
            key = lease_key(self._cluster, self.topic)
            assert leases.take_from(key, leases.holder(key)[0], other, 30.0)
            time.sleep(1.5)  # the holder's next renewal finds the lease taken
            yield from batches

    egress = TakenOverMidPass(target, table, batch_size=2)
    with pytest.raises(EgressLeaseLostError, match=r"lost its turn mid-pass \(another egress took it over\)"):
        egress.run()
    assert kafka_client.high_water_marks(target, topic) == {0: 2}  # the first batch only
    assert leases.release(lease_key(egress._cluster, topic), other)
    assert Egress(target, table, batch_size=2).run() == 6
    assert [(r["kafka"]["offset"], r["key"]["id"]) for r in published(target, topic)] == [(i, i) for i in range(8)]
