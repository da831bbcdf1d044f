"""A pooled topic's raw view: its rows of the raw pool, with `key` and `value` back in their Spark types.

The view has the raw table's shape (kafka, key, value) and name (raw_<topic>),
so whatever reads a raw table (a mirror's model, its data tests, an analyst)
reads a pooled topic the same way. Spark keeps a view's text, so the types are
literals in it: when a topic's writer schemas evolve its types, ingest replaces
the view (before the commit bringing the new rows) with the merged types.
"""

from __future__ import annotations

from pyspark.sql import types as T
from sqlglot import exp


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def ddl(data_type: T.DataType) -> str:
    """A Spark type as the DDL text `from_json` takes, field names quoted."""
    if isinstance(data_type, T.StructType):
        return "STRUCT<" + ", ".join(f"{_quote(f.name)}: {ddl(f.dataType)}" for f in data_type.fields) + ">"
    if isinstance(data_type, T.ArrayType):
        return f"ARRAY<{ddl(data_type.elementType)}>"
    if isinstance(data_type, T.MapType):
        return f"MAP<{ddl(data_type.keyType)}, {ddl(data_type.valueType)}>"
    if isinstance(data_type, T.DecimalType):
        return f"DECIMAL({data_type.precision}, {data_type.scale})"
    return data_type.simpleString().upper()


def _parsed(column: str, data_type: T.DataType) -> exp.Expression:
    return exp.alias_(exp.Anonymous(this="from_json", expressions=[exp.column(column, quoted=True),
                                                                   exp.Literal.string(ddl(data_type))]),
                      column, quoted=True)


def _table(name: str) -> exp.Table:
    db, _, table = name.rpartition(".")
    return exp.table_(exp.to_identifier(table, quoted=True), db=exp.to_identifier(db, quoted=True) if db else None)


def view_sql(view: str, pool: str, topic: str, key_type: T.DataType, value_type: T.DataType) -> str:
    """CREATE OR REPLACE VIEW `view` (database.name) over `pool`'s rows of `topic`, typed."""
    select = (exp.select(exp.column("kafka", quoted=True), _parsed("key", key_type), _parsed("value", value_type))
              .from_(_table(pool))
              .where(exp.EQ(this=exp.Dot(this=exp.column("kafka", quoted=True),
                                         expression=exp.to_identifier("topic", quoted=True)),
                            expression=exp.Literal.string(topic))))
    create = exp.Create(this=_table(view), kind="VIEW", replace=True, expression=select)
    return create.sql(dialect="spark")

