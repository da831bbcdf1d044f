"""What every ingest reader does, so `Ingest` can run either (ingest/from_kafka.py).

Two readers implement it: Spark's (ingest/spark_reader.py, the default: Spark
reads each planned batch from Kafka, decodes and commits it in one job) and the
Python consumer's (ingest/consumer_reader.py: librdkafka reads, the JVM decodes,
one background thread commits). Both read every topic from its state's read
offsets, commit batch after batch into the topic's raw table (one Delta commit
each, carrying its offsets), and stop by the same `--exit-after` rule
(zync.progress.CaughtUp). ingest/fallback.py says when the first hands over to the second.
"""

from __future__ import annotations

from typing import Protocol


class Reader(Protocol):
    name: str  # "spark" or "consumer": in the run's log and its count of batches read

    def read(self, exit_after: float | None) -> None:
        """Read and commit until caught up and idle for `exit_after` seconds (None: until interrupted).

        Raises fallback.SparkCannotRead if this reader cannot go on and the consumer must read the rest.
        """
        ...
