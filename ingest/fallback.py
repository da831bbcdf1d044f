"""When, and why, Spark's reader hands over to the Python consumer: the one place that decides.

Spark's reader is the default (ingest/spark_reader.py). The consumer
(ingest/consumer_reader.py) takes over in exactly three cases:

1. before the run, the profile has a librdkafka setting the Java client cannot
   be given (ingest/java_kafka.py): the consumer reads the whole run;
2. a batch's Spark job failed on its data: a payload it was not told how to
   decode (our own `raise_error`, see ingest/spark_job.py) or Avro that
   from_avro's FAILFAST mode cannot read. A Spark job fails whole and cannot
   say which message it was, so the consumer reads that batch's offsets, takes
   them message by message, and stops at (or dead-letters) the first it cannot take;
3. a batch's Spark job failed for any other reason (Spark cannot read Kafka at
   all, say): the consumer reads from there to the end of the run.

Each hand-over is logged with its reason (`reader` and `spark-read-failed` events).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from ingest.java_kafka import NoJavaEquivalent, java_kafka_options
from ingest.spark_errors import java_causes
from ingest.spark_job import UNDECODABLE
from zync.spark_internals import is_java_instance

# spark-avro 3.5's from_avro in FAILFAST mode throws a plain SparkException with this message (no
# error class; Spark 4 names it MALFORMED_RECORD_IN_PARSING, which is checked too).
MALFORMED_AVRO = "Malformed records are detected"
MALFORMED_ERROR_CLASS = "MALFORMED_RECORD_IN_PARSING"
SPARK_FAILURES = (Py4JJavaError, PySparkException)  # what a failed Spark job raises in Python


class SparkCannotRead(Exception):
    """Spark's reader cannot read this run (case 1 or 3); the message says why."""


class Fallback(Enum):
    """What the consumer reads after a batch's Spark job failed."""

    BATCH = "the consumer reads this batch"  # case 2
    REST = "the consumer reads from here on"  # case 3


def spark_options(kafka_settings: dict[str, Any]) -> dict[str, str]:
    """The target's connection for Spark's Kafka source; SparkCannotRead (case 1) if it has no Java form."""
    try:
        options = java_kafka_options(kafka_settings)
    except NoJavaEquivalent as e:
        raise SparkCannotRead(f"Spark's Kafka source cannot be given {e}; the Python consumer reads instead") from None
    # As the Python consumer does (librdkafka's default): never a message of an aborted transaction.
    return {**options, "kafka.isolation.level": "read_committed"}


def after_failed_batch(e: BaseException) -> tuple[Fallback, str]:
    """Case 2 or 3 for a batch's failed Spark job, and the cause to log."""
    for cause in java_causes(e):
        message = str(cause.getMessage() or "")
        if is_java_instance(cause, "java.lang.RuntimeException") and message.startswith(UNDECODABLE):
            return Fallback.BATCH, message  # our raise_error: a payload with no writer schema given
        error_class = (cause.getErrorClass() if is_java_instance(cause, "org.apache.spark.SparkThrowable")
                       else None)
        if (error_class or "").startswith(MALFORMED_ERROR_CLASS) or (
                is_java_instance(cause, "org.apache.spark.SparkException") and message.startswith(MALFORMED_AVRO)):
            return Fallback.BATCH, message
    lines = str(e).splitlines() or [type(e).__name__]
    return Fallback.REST, lines[-1]
