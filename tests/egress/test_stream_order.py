"""egress.stream.in_offset_order: batches from Spark's Arrow stream checked to run in offset order, none held."""

from __future__ import annotations

import pyarrow as pa
import pytest

from egress.stream import OffsetGapError, in_offset_order


def batch(*offsets: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"offset": pa.array(offsets, pa.int64()),
                                       "v": [f"v{o}".encode() for o in offsets]})


def offsets_of(batches) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


class Counted:
    """An iterator of batches that records how many have been taken from it."""

    def __init__(self, batches: list[pa.RecordBatch]):
        self._batches = iter(batches)
        self.taken = 0

    def __iter__(self) -> Counted:
        return self

    def __next__(self) -> pa.RecordBatch:
        batch = next(self._batches)
        self.taken += 1
        return batch


def test_each_batch_is_passed_on_before_the_next_is_read():
    # The memory bound: in_offset_order holds no batch beyond the one it yields, however long the pass.
    arriving = Counted([batch(10, 11), batch(12), batch(13, 14, 15)])
    seen = []
    for b in in_offset_order(arriving, 10, 16):
        seen.append((b.column("offset")[0].as_py(), arriving.taken))
    assert seen == [(10, 1), (12, 2), (13, 3)]


def test_a_batch_that_overtakes_an_earlier_one_is_a_gap_not_held_back():
    # Partitions are fetched in offset order, so a batch that starts late means the rows before it are missing.
    arriving = Counted([batch(0, 1), batch(4, 5), batch(2, 3)])
    with pytest.raises(OffsetGapError, match="no out row at offset 2"):
        list(in_offset_order(arriving, 0, 6))
    assert arriving.taken == 2


@pytest.mark.parametrize("arriving, message", [
    ([batch(0, 1), batch(3)], "no out row at offset 2"),                   # a gap inside the range
    ([batch(0, 1, 2)], "no out row at offset 3"),                          # the last row missing
    ([batch(0, 2, 3)], "gap or a repeat"),                                 # a gap inside a batch
    ([batch(0, 1, 1)], "gap or a repeat"),                                 # a repeat inside a batch
    ([batch(0, 1, 2), batch(1)], "repeat or fall outside"),                # a repeat of a yielded row
    ([batch(0, 1, 2, 3), batch(4)], "repeat or fall outside"),             # past the end
    ([batch(0, 1), batch(1, 2)], "repeat or fall outside"),                # overlapping batches
    ([batch(2, 3), batch(0, 1)], "no out row at offset 0"),                # the first rows late
])
def test_anything_but_one_row_per_offset_is_refused(arriving, message):
    with pytest.raises(OffsetGapError, match=message):
        list(in_offset_order(iter(arriving), 0, 4))
