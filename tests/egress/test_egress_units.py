"""Pure logic of egress and produce: schema inference, delivery checks, Spark -> Avro."""

from __future__ import annotations

import os
import socket

import pytest
from pyspark.sql import types as T

from egress.delivery import DeliveryCheck, OffsetMismatchError
from egress.schemas import record_name
from zync.avro_types import avro_schema_for_struct
from zync.errors import ZyncError
from zync.schema_inference import infer_schema


class Delivered:
    """A delivery report's message: only its offset matters to the check."""

    def __init__(self, offset: int):
        self._offset = offset

    def offset(self) -> int:
        return self._offset


def test_delivery_check_accepts_consecutive_offsets_and_names_the_first_gap():
    check = DeliveryCheck("T", 5)
    for offset in (5, 6, 7):
        check(None, Delivered(offset))
    check.raise_if_failed()
    check(None, Delivered(9))
    with pytest.raises(OffsetMismatchError, match="output offset 8 landed at Kafka offset 9"):
        check.raise_if_failed()


def test_inference_merges_all_lines_and_makes_every_field_optional():
    schema = infer_schema([{"a": 1, "b": {"c": "x"}}, {"a": 1.5, "b": {"d": [1, None]}}, None], "V")
    assert schema == {"type": "record", "name": "V", "fields": [
        {"name": "a", "type": ["null", "double"], "default": None},
        {"name": "b", "type": ["null", {"type": "record", "name": "V_b", "fields": [
            {"name": "c", "type": ["null", "string"], "default": None},
            {"name": "d", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None}]}],
         "default": None}]}
    assert infer_schema([None, None], "K") == "null"
    assert infer_schema(["a", "b"], "K") == "string"
    with pytest.raises(ZyncError, match=r"V\.a is a boolean in one record and a long in another"):
        infer_schema([{"a": True}, {"a": 1}], "V")


def test_partial_schemas_keep_only_their_fields_all_optional():
    struct = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType()),
                           T.StructField("at", T.TimestampType())])
    schema = avro_schema_for_struct(struct, "T_value", "zync", only_fields=["id", "at"])
    assert schema == {"type": "record", "name": "T_value", "namespace": "zync", "fields": [
        {"name": "id", "type": ["null", "long"], "default": None},
        {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros",
                                         "connect.name": "io.debezium.time.MicroTimestamp"}], "default": None}]}


def test_record_names_are_avro_names():
    assert record_name("my.topic-1", "value") == "my_topic_1_value"
    assert record_name("1st", "key") == "_1st_key"


def test_egresses_of_one_topic_take_turns_and_a_dead_holder_frees_its_turn(tmp_path, monkeypatch):
    """The topic's egress lock: a second pass waits for the first; a holder killed with -9 frees it."""
    import signal
    import subprocess
    import sys
    import threading
    import time

    from egress.to_kafka import LOCK_DIR_ENV, EgressBusyError, lock_path, topic_turn

    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    servers, topic = "127.0.0.1:9092", "Out"
    assert lock_path(servers, topic) == lock_path(" 127.0.0.1:9092 ", topic) != lock_path(servers, "Other")
    assert lock_path(servers, topic) != lock_path("127.0.0.1:9093", topic)

    order = []
    inside = threading.Event()

    def first():
        with topic_turn(servers, topic):
            inside.set()
            order.append("first in")
            time.sleep(0.5)
            order.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    inside.wait(5)
    with topic_turn(servers, topic):
        order.append("second in")
    thread.join()
    assert order == ["first in", "first out", "second in"]

    # Another process holds the turn: a pass gives up after its wait, and takes it once that process is killed.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
                               "print('held', flush=True); time.sleep(600)", str(lock_path(servers, topic))],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(EgressBusyError, match="another egress of Out"):
            with topic_turn(servers, topic, wait_s=0.3):
                pass
        stop = threading.Event()
        stop.set()
        with pytest.raises(EgressBusyError):  # a stopping egress does not wait its turn out
            with topic_turn(servers, topic, stop=stop):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    with topic_turn(servers, topic, wait_s=5):
        pass


def test_the_lease_ttl_comes_from_the_environment_and_is_checked():
    from egress.lease import DEFAULT_TTL_S, TTL_ENV, lease_ttl

    assert lease_ttl({}) == DEFAULT_TTL_S == 30.0
    assert lease_ttl({TTL_ENV: " 2.5 "}) == 2.5
    for bad in ("soon", "0.2", "-5", "nan", "inf"):
        with pytest.raises(ZyncError, match=TTL_ENV):
            lease_ttl({TTL_ENV: bad})


def test_a_lease_is_named_by_cluster_and_topic_and_its_holder_by_its_lock(tmp_path):
    from egress.lease import lease_key, lock_domain, owner_domain, owner_name, shown_owner

    key = lease_key("cluster-a", "Out")
    assert len(key) == 64 and key == lease_key("cluster-a", "Out")
    assert key != lease_key("cluster-b", "Out") != lease_key("cluster-a", "Other")
    assert lease_key("a\nb", "c") != lease_key("a", "b\nc")  # the separator cannot be forged

    here, there = lock_domain(tmp_path / "a.lock"), lock_domain(tmp_path / "b.lock")
    assert here == lock_domain(tmp_path / "." / "a.lock") != there
    one, two = owner_name(here), owner_name(here)
    assert one != two  # one name a turn, even in one process
    assert owner_domain(one) == owner_domain(two) == here
    assert owner_domain(owner_name(there)) == there
    assert owner_domain("someone else's name") is None
    assert shown_owner(one) == f"{socket.gethostname()} pid {os.getpid()}"


def test_a_holder_counts_its_lease_held_until_short_of_its_ttl_after_its_last_renewal():
    from egress.lease import HELD_FRACTION, Holding

    holding = Holding.taken(10.0, started=100.0)
    assert holding.held(100.0) and holding.held(100.0 + HELD_FRACTION * 10 - 0.01)
    assert not holding.held(100.0 + HELD_FRACTION * 10)  # before a taker's full TTL from the row's time
    assert "not renewed for 8.0 s of its 10 s TTL" in holding.why_not(108.0)
    holding.renewed(started=105.0)
    assert holding.held(112.9) and not holding.held(113.0)
    holding.renewed(started=104.0)  # a renewal that started earlier never shortens it
    assert holding.held(112.9)
    holding.lose("another egress took it over")
    assert not holding.held(106.0) and holding.why_not(106.0) == "another egress took it over"


def test_produce_batch_stops_before_a_fenced_record():
    from egress.delivery import CHECK_EVERY, produce_batch

    class Queue:
        """What produce_batch calls of a producer, keeping what it was given."""

        def __init__(self):
            self.records = []

        def produce(self, topic, value, key, partition):
            self.records.append(value)

        def poll(self, timeout):
            return 0

    queue, check = Queue(), DeliveryCheck("t", 0)
    values = [b"v"] * (3 * CHECK_EVERY)
    asked = []

    def fenced() -> bool:
        asked.append(len(queue.records))
        return len(asked) == 3

    assert produce_batch(queue, "t", [None] * len(values), values, check, fenced=fenced) == 2 * CHECK_EVERY
    assert asked == [0, CHECK_EVERY, 2 * CHECK_EVERY]  # asked before each CHECK_EVERY records, none after
    assert len(queue.records) == 2 * CHECK_EVERY
    assert produce_batch(Queue(), "t", [None], [b"v"], check, fenced=lambda: True) == 0
