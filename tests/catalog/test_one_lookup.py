"""Delta's session catalog as the project's Spark settings name it (jvm/session-catalog,
zync.catalog.OneLookupDeltaCatalog) looks a table up with one metastore call and answers what
Spark's own lookup (three calls) answers: the same table, the same errors, nothing cached.

Compared here with Spark's V2SessionCatalog over the same session catalog, on the shared catalog,
counting Spark's own tally of calls to the metastore client (HiveCatalogMetrics).
"""

from __future__ import annotations

import uuid

import pytest
from pyspark.errors import AnalysisException

from testkit.catalog import metastore_calls, table_identifier
from zync.spark_internals import catalog_table_names, java_class, java_session

SCHEMA = "zync_one_lookup"


@pytest.fixture(scope="module", autouse=True)
def schema(spark):
    spark.sql(f"create database if not exists {SCHEMA}")
    yield
    spark.sql(f"drop database if exists {SCHEMA} cascade")


@pytest.fixture(scope="module")
def catalogs(spark):
    """(ours, Spark's) over this session's catalog."""
    session_catalog = java_session(spark).sessionState().catalog()
    return (java_class(spark, "zync.catalog.OneLookupSessionCatalog")(session_catalog),
            java_class(spark, "org.apache.spark.sql.execution.datasources.v2.V2SessionCatalog")(session_catalog))


@pytest.fixture()
def names():
    """New table names (the schema, dropped after the module, takes them all)."""
    return lambda prefix: f"{prefix}_{uuid.uuid4().hex[:8]}"


def _load(spark, catalog, schema: str, name: str) -> tuple[object, int]:
    before = metastore_calls(spark)
    table = catalog.loadTable(table_identifier(spark, schema, name))
    return table, metastore_calls(spark) - before


def test_the_sessions_catalog_is_the_one_lookup_catalog(spark):
    assert spark.conf.get("spark.sql.catalog.spark_catalog") == "zync.catalog.OneLookupDeltaCatalog"
    manager = java_session(spark).sessionState().catalogManager()
    assert manager.v2SessionCatalog().getClass().getName() == "zync.catalog.OneLookupDeltaCatalog"


@pytest.mark.parametrize("kind", ["delta", "view", "parquet with char and varchar"])
def test_a_table_is_looked_up_with_one_call_and_is_the_table_spark_finds(spark, catalogs, names, kind):
    ours, sparks = catalogs
    table = names("one_lookup")
    if kind == "delta":
        spark.sql(f"create table {SCHEMA}.{table} (id bigint, name string) using delta")
    elif kind == "view":
        base = names("one_lookup_base")
        spark.sql(f"create table {SCHEMA}.{base} (id bigint) using delta")
        spark.sql(f"create view {SCHEMA}.{table} as select id from {SCHEMA}.{base}")
    else:
        spark.sql(f"create table {SCHEMA}.{table} (code char(3), label varchar(10)) using parquet")
    found, our_calls = _load(spark, ours, SCHEMA, table)
    expected, spark_calls = _load(spark, sparks, SCHEMA, table)
    assert (our_calls, spark_calls) == (1, 3)
    assert found.catalogTable().equals(expected.catalogTable()), (found.catalogTable().toString(),
                                                                   expected.catalogTable().toString())
    assert found.catalogTable().identifier().catalog().get() == "spark_catalog"
    if kind.startswith("parquet"):  # CHAR and VARCHAR read as strings, as Spark's own lookup gives them
        assert [f.dataType().typeName() for f in found.catalogTable().schema().fields()] == ["string", "string"]


@pytest.mark.parametrize("where", ["table", "database"])
def test_a_missing_table_or_database_fails_as_sparks_lookup_fails(spark, catalogs, where):
    ours, sparks = catalogs
    schema = SCHEMA if where == "table" else f"no_such_schema_{uuid.uuid4().hex[:8]}"
    errors = []
    for catalog in (ours, sparks):
        with pytest.raises(AnalysisException) as raised:  # pyspark's form of Spark's NoSuchTableException
            catalog.loadTable(table_identifier(spark, schema, "no_such_table"))
        errors.append(raised.value)
    assert [e.getErrorClass() for e in errors] == ["TABLE_OR_VIEW_NOT_FOUND"] * 2
    assert str(errors[0]) == str(errors[1])
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"select * from {schema}.no_such_table")


def test_a_statement_naming_a_table_asks_the_metastore_once(spark, names):
    table = names("one_lookup_sql")
    spark.sql(f"create table {SCHEMA}.{table} (id bigint) using delta")
    spark.sql(f"insert into {SCHEMA}.{table} values (1), (2)")
    before = metastore_calls(spark)
    assert spark.sql(f"select count(*) from {SCHEMA}.{table}").collect()[0][0] == 2
    assert metastore_calls(spark) - before == 1


def test_nothing_is_cached_a_table_replaced_by_another_session_is_seen_at_once(spark, names):
    table = names("one_lookup_replaced")
    other = spark.newSession()  # its own catalog instance over the same metastore, as another process has
    other.sql(f"create table {SCHEMA}.{table} (id bigint) using delta")
    assert spark.sql(f"select * from {SCHEMA}.{table}").columns == ["id"]
    other.sql(f"drop table {SCHEMA}.{table}")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"select * from {SCHEMA}.{table}")
    other.sql(f"create table {SCHEMA}.{table} (id bigint, name string) using delta")
    assert spark.sql(f"select * from {SCHEMA}.{table}").columns == ["id", "name"]


def test_a_databases_table_names_are_listed_with_one_metastore_call(spark, names):
    """What `zync run` asks to know which tables are there yet (service/versions.py): tables and views,
    in lower case, none for a database that is not there."""
    table, view = names("Listed"), names("listed_view")
    spark.sql(f"create table {SCHEMA}.{table} (id int) using delta")
    spark.sql(f"create view {SCHEMA}.{view} as select 1 as id")
    calls = metastore_calls(spark)
    listed = catalog_table_names(spark, SCHEMA)
    assert metastore_calls(spark) - calls == 2  # the database's existence, then its names (Spark's two)
    assert {table.lower(), view} <= listed
    assert catalog_table_names(spark, "zync_no_such_database") == frozenset()
