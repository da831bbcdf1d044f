"""Where a read starts and ends: the watermarks the caller read (zync run reads every topic's at a
cycle's start), or the broker's when the caller has none for a partition; a partition read for the
first time starts at its low watermark."""

from __future__ import annotations

from types import SimpleNamespace

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from ingest.consumer_reader import ConsumerReader


class Broker:
    """What a consumer's get_watermark_offsets answers, and which partitions it was asked for."""

    def __init__(self, marks: dict[tuple[str, int], tuple[int, int]]):
        self.marks = marks
        self.asked: list[tuple[str, int]] = []

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        self.asked.append((tp.topic, tp.partition))
        return self.marks[(tp.topic, tp.partition)]


def reader(read_offsets: dict[int, int], partitions: list[int]) -> ConsumerReader:
    """A reader of topic "t" whose partitions were read up to `read_offsets`."""
    return ConsumerReader(None, {"t": SimpleNamespace(read_offsets=read_offsets)}, {"t": partitions},
                          None, None, 1000, 1.0)


def test_the_callers_marks_are_used_without_asking_the_broker():
    broker = Broker({})
    known = {("t", 0): (0, 8), ("t", 1): (3, 4), ("t", 2): (0, 9)}
    assert reader({0: 5, 2: 9}, [0, 1, 2])._watermarks(broker, known) == known
    assert broker.asked == []


def test_a_partition_the_caller_has_no_mark_for_is_asked_of_the_broker():
    broker = Broker({("t", 1): (0, 20)})
    assert reader({}, [0, 1])._watermarks(broker, {("t", 0): (0, 5)}) == {("t", 0): (0, 5), ("t", 1): (0, 20)}
    assert broker.asked == [("t", 1)]
    assert reader({}, [1])._watermarks(broker, None) == {("t", 1): (0, 20)}


def test_a_partition_read_for_the_first_time_starts_at_its_low_mark_not_a_logical_offset():
    ends = {("t", 0): (0, 8), ("t", 1): (3, 4)}
    assignment = reader({0: 5}, [0, 1, 2])._assignment(ends)
    assert [(tp.partition, tp.offset) for tp in assignment] == [(0, 5), (1, 3), (2, OFFSET_BEGINNING)]


def test_the_marks_to_read_to_are_the_partitions_with_messages_past_the_start():
    assignment = [TopicPartition("t", 0, 5), TopicPartition("t", 1, 3), TopicPartition("t", 2, 9)]
    ends = {("t", 0): (0, 8), ("t", 1): (3, 4), ("t", 2): (0, 9)}
    # partition 0 is behind from 5 to 8, partition 1 from 3 to 4; partition 2 is read to its end
    assert ConsumerReader._start_marks(assignment, ends) == {("t", 0): 8, ("t", 1): 4}
    assert ConsumerReader._start_marks([TopicPartition("t", 0, OFFSET_BEGINNING)], {("t", 0): (2, 6)}) == {("t", 0): 6}
