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

from zync.transactions import CUT_TOPIC_PREFIX, CUT_VALUE_DDL


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
    return exp.alias_(exp.Anonymous(this="from_json", expressions=[exp.column(column, table="pool", quoted=True),
                                                                   exp.Literal.string(ddl(data_type))]),
                      column, quoted=True)


def _table(name: str) -> exp.Table:
    db, _, table = name.rpartition(".")
    return exp.table_(exp.to_identifier(table, quoted=True), db=exp.to_identifier(db, quoted=True) if db else None)


def _kafka(field: str, table: str = "pool") -> exp.Expression:
    return exp.Dot(this=exp.column("kafka", table=table, quoted=True), expression=exp.to_identifier(field, quoted=True))


def view_sql(view: str, pool: str, topic: str, key_type: T.DataType, value_type: T.DataType,
             cut: tuple[str, str] | None = None) -> str:
    """CREATE OR REPLACE VIEW `view` (database.name) over `pool`'s rows of `topic`, typed.

    `cut`: (its connector's cut table, the connector's transaction topic): the view then shows the
    topic's rows up to the cut only (zync/transactions.py), each partition to its offset there, none
    before a first cut, so that every view of the connector stops after the same whole transaction.
    """
    select = (exp.select(_kafka_column(), _parsed("key", key_type), _parsed("value", value_type))
              .from_(exp.alias_(_table(pool), "pool", quoted=True))
              .where(exp.EQ(this=_kafka("topic"), expression=exp.Literal.string(topic))))
    if cut is not None:
        cut_table, connector = cut
        # The connector's whole cut as a scalar subquery, the same text in every view of the connector,
        # so that a query over several of them computes it once (Spark reuses a subquery it meets
        # again) and reads each view's rows without a join: a join with the cut per view cost a scan
        # of the pool, a shuffle and a broadcast each time a query named a view.
        whole = exp.Subquery(this=exp.select(exp.column("offsets", quoted=True)).from_(_table(cut_table)).where(
            exp.EQ(this=exp.column("connector", quoted=True), expression=exp.Literal.string(connector))))
        offsets = exp.Anonymous(this="element_at", expressions=[whole, exp.Literal.string(topic)])
        bound = exp.Coalesce(this=exp.Anonymous(this="element_at", expressions=[offsets, _kafka("partition")]),
                             expressions=[exp.Literal.number(-1)])
        select = select.where(exp.LTE(this=_kafka("offset"), expression=bound), append=True)
    create = exp.Create(this=_table(view), kind="VIEW", replace=True, expression=select)
    return create.sql(dialect="spark")


def cut_view_sql(view: str, pool: str) -> str:
    """CREATE OR REPLACE VIEW `view` (database.name): each connector's newest cut of `pool`, from its cut
    rows (zync/transactions.py), in the columns CUT_COLUMNS names.

    A data view bounds its rows by it in a subquery: the pool read twice in one query, and so at one
    version (Spark resolves a table once per query): the rows and the cut the same commit left. Only
    each connector's newest row is parsed."""
    newest = (exp.select(exp.alias_(_parsed_cut(exp.Anonymous(this="max_by", expressions=[
                  exp.column("value", table="pool", quoted=True), _kafka("offset")])), "cut", quoted=True))
              .from_(exp.alias_(_table(pool), "pool", quoted=True)).where(_is_cut_row()).group_by(_kafka("topic")))
    select = exp.select(*_cut_columns()).from_(exp.alias_(exp.Subquery(this=newest), "zync_cuts", quoted=True))
    return exp.Create(this=_table(view), kind="VIEW", replace=True, expression=select).sql(dialect="spark")


def cuts_view_sql(view: str, pool: str) -> str:
    """CREATE OR REPLACE VIEW `view` (database.name): every cut of `pool`'s connectors, the cut's history:
    CUT_COLUMNS and `position`, the cut row's place among its connector's (ascending as the cut moved)."""
    parsed = (exp.select(exp.alias_(_parsed_cut(exp.column("value", table="pool", quoted=True)), "cut", quoted=True),
                         exp.alias_(_kafka("offset"), "position", quoted=True))
              .from_(exp.alias_(_table(pool), "pool", quoted=True)).where(_is_cut_row()))
    select = (exp.select(*_cut_columns(), exp.alias_(exp.column("position", table="zync_cuts", quoted=True),
                                                     "position", quoted=True))
              .from_(exp.alias_(exp.Subquery(this=parsed), "zync_cuts", quoted=True)))
    return exp.Create(this=_table(view), kind="VIEW", replace=True, expression=select).sql(dialect="spark")


def _is_cut_row() -> exp.Expression:
    return exp.Like(this=_kafka("topic"), expression=exp.Literal.string(CUT_TOPIC_PREFIX + "%"))


def _parsed_cut(value: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this="from_json", expressions=[value, exp.Literal.string(CUT_VALUE_DDL)])


def _cut_columns() -> list[exp.Expression]:
    """CUT_COLUMNS of a parsed cut row `zync_cuts`.`cut`."""
    def field(name: str) -> exp.Expression:
        return exp.Dot(this=exp.column("cut", table="zync_cuts", quoted=True), expression=exp.to_identifier(name, quoted=True))

    def instant(name: str) -> exp.Expression:
        return exp.Anonymous(this="timestamp_millis", expressions=[field(name)])

    partition, offset, topic, parts = (exp.to_identifier(n, quoted=True) for n in ("partition", "offset", "topic", "parts"))
    int_keys = exp.Anonymous(this="transform_keys", expressions=[
        exp.column(parts), exp.Lambda(this=exp.cast(exp.column(partition), "INT"), expressions=[partition, offset])])
    offsets = exp.Anonymous(this="transform_values", expressions=[
        field("offsets"), exp.Lambda(this=int_keys, expressions=[topic, parts])])
    columns = {"connector": field("connector"), "transaction": field("transaction"),
               "committed_at": instant("committed_ms"), "end_offset": field("end_offset"), "expired": field("expired"),
               "cut_at": instant("cut_ms"), "offsets": offsets}
    return [exp.alias_(value, name, quoted=True) for name, value in columns.items()]


def _kafka_column() -> exp.Expression:
    return exp.alias_(exp.column("kafka", table="pool", quoted=True), "kafka", quoted=True)

