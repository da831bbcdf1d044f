"""Encoded rows from Spark to Python as Arrow, streamed in offset order by one Spark job.

A Spark query per batch of rows costs a second or more of planning (Delta
snapshot, file skipping) however few rows it reads: at 100,000 rows a batch
that fixed cost dominated egress. Instead one query covers the whole pass:
partitioned by offset into partitions of one batch each, sorted within
them, collected through PySpark's Arrow socket and read as the batches
arrive, while the producer sends the previous ones.

Spark returns whole partitions in the order they finish, which is almost
the offset order; `in_offset_order` holds back a partition that overtook an
earlier one until that one arrives.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import ceil

from zync.errors import ZyncError


def arrow_batches(frame) -> Iterator:  # -> Iterator[pyarrow.RecordBatch]
    """Every Arrow record batch of `frame`, in arrival order, as they arrive.

    The streaming counterpart of PySpark 3.5's private `DataFrame._collect_as_arrow`
    (`toArrow` is public only from 4.0), which reads the same socket to the end
    before returning anything.
    """
    import pyarrow as pa
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.rdd import _load_from_socket
    from pyspark.sql.pandas.serializers import ArrowCollectSerializer
    from pyspark.traceback_utils import SCCallSiteSync

    with SCCallSiteSync(frame._sc):
        port, auth_secret, server = frame._jdf.collectAsArrowToPython()
    finished = False
    try:
        for item in _load_from_socket((port, auth_secret), ArrowCollectSerializer()):
            if isinstance(item, pa.RecordBatch):
                yield item
            # The last item is the batches' partition order, which in_offset_order does not need.
        finished = True
    finally:
        if finished:
            with unwrap_spark_exception():
                server.getResult()  # raises what failed in the JVM


def partitioned_by_offset(encoded, lo: int, hi: int, batch_size: int):
    """Rows with offsets [lo, hi) in partitions of batch_size offsets each, in order, sorted within.

    repartitionByRange would first run a sampling job over the whole input
    (encoding every row once more); the offsets of [lo, hi) are known, so
    the bucket of each row is simply (offset - lo) div batch_size. Spark's
    hash partitioning sends a row to pmod(hash(column), n), so each bucket is
    given as its column value a number that hashes to the bucket's own index.
    """
    from pyspark.sql import functions as F

    partitions = max(1, ceil((hi - lo) / batch_size))
    bucket = F.floor((F.col("offset") - F.lit(lo)) / F.lit(batch_size))
    landing = F.element_at(F.array(*[F.lit(v) for v in _hashing_to_own_index(encoded.sparkSession, partitions)]),
                           (bucket + 1).cast("int"))
    return (encoded.where((F.col("offset") >= lo) & (F.col("offset") < hi))
            .repartition(partitions, landing.alias("zync_partition"))
            .sortWithinPartitions("offset"))


def _hashing_to_own_index(spark, partitions: int) -> list[int]:
    """For p in 0..partitions-1, a bigint v with pmod(hash(v), partitions) = p (as HashPartitioning computes it)."""
    from pyspark.sql import functions as F

    found = dict(spark.range(0, 64 * partitions)
                 .groupBy(F.pmod(F.hash("id"), F.lit(partitions)).alias("p")).agg(F.min("id"))
                 .collect())
    missing = [p for p in range(partitions) if p not in found]
    if missing:  # 64 candidates per partition: practically never
        raise ZyncError(f"internal: no partitioning value for partitions {missing[:5]}; use another --batch-size")
    return [found[p] for p in range(partitions)]


class OffsetGapError(ZyncError):
    """The table does not hold exactly one out row per offset of the range."""


def in_offset_order(batches: Iterator, lo: int, hi: int) -> Iterator:
    """Yield the batches so that their offsets run lo, lo+1, ..., hi-1 exactly.

    Each batch must itself be a contiguous run of offsets (a range partition
    sorted by offset is cut into such runs); a batch that starts past the next
    expected offset waits for the ones before it. Anything else (a gap, a
    repeat, offsets out of [lo, hi)) raises OffsetGapError.
    """
    import pyarrow.compute as pc

    expected = lo
    waiting: dict[int, object] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        offsets = batch.column("offset")
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        if last - first + 1 != batch.num_rows or pc.any(pc.less_equal(
                offsets.slice(1), offsets.slice(0, batch.num_rows - 1))).as_py():
            raise OffsetGapError(f"offsets {first}..{last} hold {batch.num_rows} rows: a gap or a repeat")
        if first < expected or last >= hi or first in waiting:
            raise OffsetGapError(f"offsets {first}..{last} repeat or fall outside {lo}..{hi - 1}")
        waiting[first] = batch
        while expected in waiting:
            ready = waiting.pop(expected)
            expected += ready.num_rows
            yield ready
    if expected < hi:
        raise OffsetGapError(f"no out row at offset {expected}")
    if waiting:
        raise OffsetGapError(f"offsets from {min(waiting)} repeat earlier ones")
