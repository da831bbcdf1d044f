"""ZYNC_WAREHOUSE against the catalog: a job stops, saying what to do, before it would make tables
in a database outside the warehouse the variable names."""

from __future__ import annotations

import pytest

from zync.errors import ZyncError
from zync.spark import WAREHOUSE_ENV, check_warehouse


def test_a_database_outside_the_named_warehouse_stops_a_job(spark, target, monkeypatch):
    spark.sql(f"create database if not exists {target.schema}")
    monkeypatch.setenv(WAREHOUSE_ENV, "s3a://zync/elsewhere")
    with pytest.raises(ZyncError, match=f"database '{target.schema}' is at file:.*ZYNC_SCHEMA"):
        check_warehouse(spark, target)


def test_the_warehouse_the_database_is_in_passes(spark, target, monkeypatch):
    spark.sql(f"create database if not exists {target.schema}")
    monkeypatch.setenv(WAREHOUSE_ENV, spark.conf.get("spark.sql.warehouse.dir"))
    check_warehouse(spark, target)
    monkeypatch.delenv(WAREHOUSE_ENV)
    check_warehouse(spark, target)
