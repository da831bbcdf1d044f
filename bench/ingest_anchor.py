"""The anchor a Spark user would pick instead of `zync from-kafka`: Structured Streaming with
spark-sql-kafka and spark-avro, from_avro on the Confluent payload, into Delta, availableNow.

Run by bench/ingest_throughput.py in its own process:
    ingest_anchor.py BOOTSTRAP TOPIC SCHEMA_FILE TABLE_PATH CHECKPOINT
Prints one JSON line: {"records": N, "seconds": S} for the query alone (not the JVM start).
"""

from __future__ import annotations

import glob
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(bootstrap: str, topic: str, schema_file: str, table: str, checkpoint: str) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    jars = sorted(glob.glob(str(ROOT / ".local/jars/spark-kafka/*.jar"))) + sorted(
        glob.glob(str(ROOT / ".local/jars/spark/delta-*.jar")))
    spark = (SparkSession.builder.appName("ingest-anchor").master("local[*]")
             .config("spark.jars", ",".join(jars))
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .config("spark.driver.memory", "2g").config("spark.sql.shuffle.partitions", "4")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    schema = Path(schema_file).read_text()
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").load())
    # The Confluent wire format: magic byte and 4-byte schema id, then the Avro body.
    rows = stream.select(
        F.struct("topic", "partition", "offset", "timestamp").alias("kafka"),
        from_avro(F.expr("substring(value, 6)"), schema).alias("value"))
    started = time.monotonic()
    query = (rows.writeStream.format("delta").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(table))
    query.awaitTermination()
    seconds = time.monotonic() - started
    records = spark.read.format("delta").load(table).count()
    print(json.dumps({"records": records, "seconds": seconds}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])
