"""A Spark DataFrame straight from Arrow record batches, one partition per batch.

PySpark 3.5 only builds DataFrames from Arrow through pandas
(`createDataFrame(pandas_df)`): a column of Kafka payloads becomes a pandas
object column and is converted back to Arrow, in slices of
`spark.sql.execution.arrow.maxRecordsPerBatch` (10,000) rows, each its own
partition. This ships the batches as they are, through the same private
channel createDataFrame uses (a temp file the JVM reads), so the Python side
costs one Arrow IPC write, and the number of partitions is ours to choose.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from zync.spark_internals import java_session, jvm_of


def frame_from_arrow(spark, batches: Sequence, schema: T.StructType):
    """The DataFrame of `batches` (pyarrow RecordBatches matching `schema`), one partition each."""
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql import DataFrame

    jvm = jvm_of(spark)
    jiter = spark.sparkContext._serialize_to_jvm(
        list(batches), ArrowStreamSerializer(),
        lambda temp_file: jvm.PythonSQLUtils.readArrowStreamFromFile(temp_file),
        lambda: jvm.ArrowIteratorServer())
    return DataFrame(jvm.PythonSQLUtils.toDataFrame(jiter, schema.json(), java_session(spark)), spark)
