"""The shared catalog as tests and benchmarks watch it: Spark's own tally of metastore calls, and a
table's name as Spark's catalog API takes it."""

from __future__ import annotations

from zync.spark_internals import java_array, java_class, jvm_of


def metastore_calls(spark) -> int:  # noqa: ANN001 - a SparkSession
    """Calls this process has made to the metastore client so far (HiveCatalogMetrics)."""
    return int(java_class(spark, "org.apache.spark.metrics.source.HiveCatalogMetrics")
               .METRIC_HIVE_CLIENT_CALLS().getCount())


def table_identifier(spark, schema: str, name: str):  # noqa: ANN001, ANN201 - a SparkSession; a py4j object
    """`schema`.`name` as a catalog Identifier, what a TableCatalog's loadTable takes."""
    namespace = java_array(spark, jvm_of(spark).java.lang.String, 1)
    namespace[0] = schema
    return java_class(spark, "org.apache.spark.sql.connector.catalog.Identifier").of(namespace, name)
