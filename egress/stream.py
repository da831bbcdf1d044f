"""Encoded rows from Spark to Python as Arrow, streamed in offset order, one partition at a time.

A Spark query per batch of rows costs a second or more of planning (Delta
snapshot, file skipping) however few rows it reads: at 100,000 rows a batch
that fixed cost dominated egress. Instead one query covers the whole pass,
partitioned by offset into partitions of one batch each, sorted within
them; its shuffle (where the rows are read and encoded) runs once, and then
each partition is fetched by a job of its own, in partition order, the next
one computed while Python produces this one (PySpark's toLocalIterator
protocol over the query's Arrow batches).

Why not one job that streams every partition (PySpark's collect-as-Arrow,
as before): it hands partitions over in the order their results reach the
driver, so Python had to hold every partition that overtook an earlier one
and the JVM every finished one Python had not read yet. With the
partitioning values hashed as INT instead of BIGINT (see
partitioned_by_offset) the buckets also shared partitions out of order
(measured, 1,000,000 rows at --batch-size 100,000: buckets arriving
0, 5, 7, 6, 9, 2, 8, 1, 3, 4 and up to 610,000 rows held in Python; at 4,000,000
rows a Python peak of 560 MB, JVM 2,319 MB). Fetched in order, Python holds
one Arrow batch (spark.sql.execution.arrow.maxRecordsPerBatch rows, 10,000)
and the JVM at most two partitions, whatever the table's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import ceil

from zync.errors import ZyncError
from zync.spark_internals import java_frame, jvm_of


def arrow_batches(frame) -> Iterator:  # -> Iterator[pyarrow.RecordBatch]
    """Every Arrow record batch of `frame`, partition after partition in partition order.

    PySpark 3.5 has no public per-partition Arrow iterator (`toArrow` is
    public only from 4.0, and reads everything first), so this pairs the two
    JVM pieces PySpark's own toLocalIterator and collect-as-Arrow are built
    from: the query's RDD of Arrow IPC batches and the serving of an RDD one
    partition per job, with the next partition prefetched.
    """
    import pyarrow as pa
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.rdd import _local_iterator_from_socket
    from pyspark.serializers import NoOpSerializer
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.traceback_utils import SCCallSiteSync

    # The RDD's items are Arrow IPC record batch messages without a schema: it is the frame's.
    schema = to_arrow_schema(frame.schema)
    context = frame.sparkSession.sparkContext
    with SCCallSiteSync(context), unwrap_spark_exception():
        batches = java_frame(frame).toArrowBatchRdd()  # runs the shuffle's map stage (reading, encoding)
        served = jvm_of(context).PythonRDD.toLocalIteratorAndServe(batches, True)
    with unwrap_spark_exception():  # a failed partition job is re-raised by the iterator
        for message in _local_iterator_from_socket(served, NoOpSerializer()):
            yield pa.ipc.read_record_batch(pa.py_buffer(message), schema)


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
    # bigint literals: F.lit of a small Python int is an INT, which Spark hashes differently
    # (hashInt), so the buckets landed in scrambled, shared partitions, out of offset order; an
    # Arrow batch could then span two buckets, refused as a gap (--batch-size 25000 at 1,000,000 rows).
    landing = F.element_at(F.array(*[F.lit(v).cast("bigint") for v in _hashing_to_own_index(partitions)]),
                           (bucket + 1).cast("int"))
    return (encoded.where((F.col("offset") >= lo) & (F.col("offset") < hi))
            .repartition(partitions, landing.alias("zync_partition"))
            .sortWithinPartitions("offset"))


def _hashing_to_own_index(partitions: int) -> list[int]:
    """For p in 0..partitions-1, a bigint v with pmod(hash(v), partitions) = p (as HashPartitioning computes it).

    Computed here with Spark's own hash function (spark_hash_long), not by a
    Spark job over candidates, which cost a second of every egress pass.
    """
    found: dict[int, int] = {}
    candidate = 0
    while len(found) < partitions:
        found.setdefault(spark_hash_long(candidate) % partitions, candidate)  # Python's % is pmod
        candidate += 1
        if candidate > 64 * partitions:  # practically never
            missing = [p for p in range(partitions) if p not in found]
            raise ZyncError(f"internal: no partitioning value for partitions {missing[:5]}; use another --batch-size")
    return [found[p] for p in range(partitions)]


_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    return (_rotl32((k1 * 0xCC9E2D51) & _M32, 15) * 0x1B873593) & _M32


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl32(h1 ^ k1, 13) * 5 + 0xE6546B64) & _M32


def spark_hash_long(value: int, seed: int = 42) -> int:
    """Spark SQL's hash() of a bigint: Murmur3 x86_32 over its two 32-bit halves (Murmur3_x86_32.hashLong)."""
    value &= 0xFFFFFFFFFFFFFFFF
    h1 = _mix_h1(_mix_h1(seed, _mix_k1(value & _M32)), _mix_k1(value >> 32))
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


class OffsetGapError(ZyncError):
    """The table does not hold exactly one out row per offset of the range."""


def in_offset_order(batches: Iterator, lo: int, hi: int) -> Iterator:
    """Pass the batches on, checking that their offsets run lo, lo+1, ..., hi-1 exactly.

    Each batch must itself be a contiguous run of offsets, and it must start
    where the one before it ended: partitions arrive in order (arrow_batches),
    so a batch that starts late means the offsets between are missing. None
    is held back, so memory stays one batch whatever the table. Anything but
    one row per offset of [lo, hi) raises OffsetGapError.
    """
    import pyarrow.compute as pc

    expected = lo
    for batch in batches:
        if batch.num_rows == 0:
            continue
        offsets = batch.column("offset")
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        if last - first + 1 != batch.num_rows or pc.any(pc.less_equal(
                offsets.slice(1), offsets.slice(0, batch.num_rows - 1))).as_py():
            raise OffsetGapError(f"offsets {first}..{last} hold {batch.num_rows} rows: a gap or a repeat")
        if first < expected or last >= hi:
            raise OffsetGapError(f"offsets {first}..{last} repeat or fall outside {lo}..{hi - 1}")
        if first > expected:
            raise OffsetGapError(f"no out row at offset {expected}")
        expected = last + 1
        yield batch
    if expected < hi:
        raise OffsetGapError(f"no out row at offset {expected}")
