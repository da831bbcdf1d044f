"""zync_struct_fields (macros/mirror/columns/) reads a struct's top-level fields from the type text Spark
writes in a describe, or says none where the text leaves any doubt, so a mirror's default key and
source time need no statement of their own.

Rendered here with Jinja's sandbox, as dbt renders macros, over texts Spark itself writes for real
tables (the same describe dbt's get_columns_in_relation reads), and compared with Spark's own
answer: the names of `select <column>.*`.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from jinja2.sandbox import SandboxedEnvironment

MACRO = Path(__file__).resolve().parents[2] / "macros" / "mirror" / "columns" / "zync_struct_fields.sql"
SCHEMA = "zync_struct_fields"


class _Returned(Exception):
    def __init__(self, value):
        super().__init__()
        self.value = value


def _return(value):  # dbt's `return` ends the macro with its value
    raise _Returned(value)


@pytest.fixture(scope="module")
def struct_fields():
    environment = SandboxedEnvironment(extensions=["jinja2.ext.do"])
    environment.globals["return"] = _return
    module = environment.from_string(MACRO.read_text()).module

    def call(type_text: str):
        try:
            getattr(module, "zync_struct_fields")(type_text)
        except _Returned as returned:
            return returned.value
        raise AssertionError("the macro returned nothing")

    return call


@pytest.mark.parametrize("text, expected", [
    ("struct<id:int>", [["id", "int"]]),
    ("struct<ID:int,line_no:bigint>", [["ID", "int"], ["line_no", "bigint"]]),
    ("struct<amount:decimal(10,2),tags:array<string>,attrs:map<string,decimal(5,1)>,inner:struct<a:int,b:string>>",
     [["amount", "decimal(10,2)"], ["tags", "array<string>"], ["attrs", "map<string,decimal(5,1)>"],
      ["inner", "struct<a:int,b:string>"]]),
    ("struct<_private:timestamp_ntz,day:date>", [["_private", "timestamp_ntz"], ["day", "date"]]),
])
def test_fields_are_read_with_their_types(struct_fields, text, expected):
    assert struct_fields(text) == expected


@pytest.mark.parametrize("text", [
    "int", "string", "array<struct<a:int>>", "struct<>",
    "struct<a:int,b:int,... 3 more fields>",  # Spark cut the struct short
    "struct<a b:int>", "struct<1a:int>", "struct<a:b:int>", "struct<é:int>", "struct<a:Int>",
    "struct<a:struct<b:int>",  # unbalanced
])
def test_a_text_that_leaves_doubt_says_none(struct_fields, text):
    assert struct_fields(text) is None


@pytest.fixture(scope="module")
def table(spark):
    """A Delta table whose columns are structs of every shape a raw table's key and value take."""
    spark.sql(f"create database if not exists {SCHEMA}")
    name = f"{SCHEMA}.shapes_{uuid.uuid4().hex[:8]}"
    wide = ", ".join(f"'f{i}', {i}" for i in range(40))  # more fields than Spark writes out
    spark.sql(f"""create table {name} using delta as select
        named_struct('ID', 1, 'line', cast(2 as bigint)) as key,
        named_struct('before', cast(null as struct<id:int, amount:decimal(10,2)>),
                     'after', named_struct('id', 1, 'amount', cast(1.5 as decimal(10,2)),
                                           'tags', array('a'), 'attrs', map('k', cast(1 as decimal(5,1)))),
                     'source', named_struct('version', '2.7', 'ts_ms', cast(1 as bigint), 'lsn', cast(3 as bigint)),
                     'op', 'c', 'ts_ms', cast(4 as bigint)) as value,
        named_struct({wide}) as wide""")
    yield name
    spark.sql(f"drop database {SCHEMA} cascade")


def test_sparks_own_type_texts_read_as_spark_names_the_fields(spark, struct_fields, table):
    types = {row["col_name"]: row["data_type"] for row in spark.sql(f"describe extended {table}").collect()}
    for column in ("key", "value"):
        fields = struct_fields(types[column])
        assert [name for name, _ in fields] == spark.sql(f"select {column}.* from {table} limit 0").columns
    source = dict(struct_fields(types["value"]))["source"]
    assert [name for name, _ in struct_fields(source)] == spark.sql(f"select value.source.* from {table} limit 0").columns
    after = dict(struct_fields(types["value"]))["after"]
    assert [name for name, _ in struct_fields(after)] == ["id", "amount", "tags", "attrs"]
    assert "more fields" in types["wide"] and struct_fields(types["wide"]) is None
