"""Where egress's memory goes, measured inside one `Egress.publish_once` pass.

Run after `bench/egress_throughput.py --keep` (its services, ports and table):

    .venv/bin/python bench/egress_probe.py [--batch-size 100000] [--tracemalloc]

Every 10 produced Arrow batches it prints the process's RSS and peak (VmRSS,
VmHWM, RssAnon), pyarrow's allocated bytes, glibc's heap (mallinfo2), the
rows Python has read from Spark but not yet produced (read ahead, and its
maximum), and the producer's queue; at the end, the order in which the
partitions' first batches arrived and where the pass waited. Wrapping is
done by replacing egress.to_kafka's names for its helpers, so egress itself
runs unchanged. With --tracemalloc, the top Python allocation sites too
(several times slower).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.egress_throughput import ENV, TABLE, TOPIC, fresh_topic  # noqa: E402


class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


@dataclass
class Seen:
    """What the probe counted so far."""

    batch_size: int
    read: int = 0           # rows taken from Spark's stream
    produced: int = 0       # rows handed to the producer
    batches: int = 0
    max_ahead: int = 0
    first_batch_s: float | None = None
    waiting_s: float = 0.0  # blocked on Spark for the next batch, after the first
    producing_s: float = 0.0
    arrival: list[int] = field(default_factory=list)
    producers: list = field(default_factory=list)


def _status_mb() -> dict[str, int]:
    wanted = ("VmRSS:", "VmHWM:", "RssAnon:")
    return {line.split(":")[0]: int(line.split()[1]) // 1024
            for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(wanted)}


def sample(tag: str, seen: Seen, trace: bool) -> None:
    import pyarrow as pa

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Mallinfo2
    heap, s, mb = libc.mallinfo2(), _status_mb(), 2 ** 20
    line = (f"{tag:<24} rss {s['VmRSS']:4d} peak {s['VmHWM']:4d} anon {s['RssAnon']:4d} MB | arrow "
            f"{pa.total_allocated_bytes() / mb:5.1f} MB | glibc heap {heap.arena / mb:6.1f} used {heap.uordblks / mb:6.1f} "
            f"MB | read ahead {seen.read - seen.produced:7d} rows (max {seen.max_ahead})")
    if seen.producers:
        line += f" | queued {len(seen.producers[0]):6d}"
    if trace:
        line += f" | traced {tracemalloc.get_traced_memory()[0] / mb:6.1f} MB"
    print(line, flush=True)


def instrument(seen: Seen, trace: bool) -> None:
    """Wrap egress.to_kafka's stream, producer and produce loop to count what passes."""
    import egress.to_kafka as tk

    stream, produce, make_producer = tk.arrow_batches, tk.produce_batch, tk.kafka_client.producer

    def arrow_batches(frame) -> Iterator:
        started = time.monotonic()
        batches = stream(frame)
        while True:
            asked = time.monotonic()
            try:
                batch = next(batches)
            except StopIteration:
                return
            if seen.first_batch_s is None:
                seen.first_batch_s = time.monotonic() - started
            else:
                seen.waiting_s += time.monotonic() - asked
            seen.read += batch.num_rows
            seen.max_ahead = max(seen.max_ahead, seen.read - seen.produced)
            first = batch.column("offset")[0].as_py()
            if first % seen.batch_size == 0:
                seen.arrival.append(first // seen.batch_size)
            handed = time.monotonic()
            yield batch
            seen.producing_s += time.monotonic() - handed

    def produce_batch(*args, **kwargs) -> int:
        n = produce(*args, **kwargs)
        seen.produced += n
        seen.batches += 1
        if seen.batches % 10 == 0:
            sample(f"batch {seen.batches}, {seen.produced:,}", seen, trace)
        return n

    def producer(*args, **kwargs):
        seen.producers.append(make_producer(*args, **kwargs))
        return seen.producers[-1]

    tk.arrow_batches, tk.produce_batch, tk.kafka_client.producer = arrow_batches, produce_batch, producer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    os.environ.update(ENV)
    os.chdir(ROOT)
    if args.tracemalloc:
        tracemalloc.start(8)
    from egress.to_kafka import Egress
    from zync.config import load_target
    from zync.progress import Progress

    seen = Seen(args.batch_size)
    egress = Egress(load_target("local"), TABLE, TOPIC, batch_size=args.batch_size)
    sample("session up", seen, args.tracemalloc)
    fresh_topic(TOPIC)  # so that the pass publishes every row
    instrument(seen, args.tracemalloc)
    started = time.monotonic()
    count = egress.publish_once(Progress("probe"))
    sample(f"done, {count:,} in {time.monotonic() - started:.1f}s", seen, args.tracemalloc)
    print(f"partitions' first batches arrived in the order {seen.arrival}")
    print(f"first batch after {seen.first_batch_s or 0:.1f}s; then blocked on Spark {seen.waiting_s:.1f}s, "
          f"producing {seen.producing_s:.1f}s")
    if args.tracemalloc:
        for stat in tracemalloc.take_snapshot().statistics("lineno")[:10]:
            print("   ", stat)


if __name__ == "__main__":
    main()
