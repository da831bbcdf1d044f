"""egress.stream.in_offset_order: batches from Spark's Arrow stream put back in offset order."""

from __future__ import annotations

import pyarrow as pa
import pytest

from egress.stream import OffsetGapError, in_offset_order


def batch(*offsets: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"offset": pa.array(offsets, pa.int64()),
                                       "v": [f"v{o}".encode() for o in offsets]})


def offsets_of(batches) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


def test_a_partition_that_overtakes_an_earlier_one_waits_for_it():
    arriving = [batch(3, 4), batch(5), batch(0, 1, 2), batch(6, 7)]
    assert offsets_of(in_offset_order(iter(arriving), 0, 8)) == list(range(8))


def test_batches_already_in_order_pass_straight_through():
    seen = []
    for b in in_offset_order(iter([batch(10, 11), batch(12)]), 10, 13):
        seen.append(b.column("offset")[0].as_py())
    assert seen == [10, 12]


@pytest.mark.parametrize("arriving, message", [
    ([batch(0, 1), batch(3)], "no out row at offset 2"),                   # a gap inside the range
    ([batch(0, 1, 2)], "no out row at offset 3"),                          # the last row missing
    ([batch(0, 2, 3)], "gap or a repeat"),                                 # a gap inside a batch
    ([batch(0, 1, 1)], "gap or a repeat"),                                 # a repeat inside a batch
    ([batch(0, 1, 2), batch(1)], "repeat or fall outside"),                # a repeat of a yielded row
    ([batch(0, 1, 2, 3), batch(4)], "repeat or fall outside"),             # past the end
    ([batch(2, 3), batch(2), batch(0, 1)], "repeat or fall outside"),      # two batches start alike
    ([batch(2, 3), batch(3), batch(0, 1)], "from 3 repeat"),               # overlapping batches
])
def test_anything_but_one_row_per_offset_is_refused(arriving, message):
    with pytest.raises(OffsetGapError, match=message):
        list(in_offset_order(iter(arriving), 0, 4))
