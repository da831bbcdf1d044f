"""Where a read's end is taken from: the watermarks the caller read (zync run reads every topic's at a
cycle's start), or the broker when the caller has none for a partition."""

from __future__ import annotations

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


def test_the_callers_marks_are_used_without_asking_the_broker():
    broker = Broker({})
    assignment = [TopicPartition("t", 0, 5), TopicPartition("t", 1, OFFSET_BEGINNING), TopicPartition("t", 2, 9)]
    known = {("t", 0): (0, 8), ("t", 1): (3, 4), ("t", 2): (0, 9)}
    # partition 0 is behind from 5 to 8, partition 1 from its low mark 3 to 4; partition 2 is read to its end
    assert ConsumerReader._start_marks(broker, assignment, known) == {("t", 0): 8, ("t", 1): 4}
    assert broker.asked == []


def test_a_partition_the_caller_has_no_mark_for_is_asked_of_the_broker():
    broker = Broker({("t", 1): (0, 20)})
    assignment = [TopicPartition("t", 0, 5), TopicPartition("t", 1, 10)]
    assert ConsumerReader._start_marks(broker, assignment, {("t", 0): (0, 5)}) == {("t", 1): 20}
    assert broker.asked == [("t", 1)]
    assert ConsumerReader._start_marks(broker, [TopicPartition("t", 1, 10)]) == {("t", 1): 20}
