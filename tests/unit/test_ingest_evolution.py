"""Which writer-schema changes evolve a raw table, and which stop ingest (pure logic)."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from ingest.evolution import Change, IncompatibleSchemaError, merge, only_nullability
from zync.shaper import ShaperError, check_shaper


def struct(*fields):
    return T.StructType([T.StructField(n, t, nullable) for n, t, nullable in fields])


BASE = struct(("id", T.LongType(), False), ("name", T.StringType(), False), ("qty", T.IntegerType(), True))


def test_only_nullability_tells_a_table_read_back_nullable_from_a_changed_type():
    nullable = struct(("id", T.LongType(), True), ("name", T.StringType(), True), ("qty", T.IntegerType(), True))
    assert only_nullability(BASE, nullable)  # what Delta reads back of a table the writer's type created
    assert only_nullability(T.ArrayType(BASE, False), T.ArrayType(nullable, True))
    assert not only_nullability(nullable, BASE)  # a field made required is not a mere cast
    assert not only_nullability(BASE, struct(("id", T.LongType(), True), ("name", T.StringType(), True)))
    assert not only_nullability(BASE, struct(("id", T.LongType(), True), ("qty", T.IntegerType(), True),
                                             ("name", T.StringType(), True)))  # another order: by name, not cast
    assert not only_nullability(BASE, struct(("id", T.LongType(), True), ("name", T.StringType(), True),
                                             ("qty", T.LongType(), True)))  # a widening rewrites


def test_the_same_type_needs_no_change():
    assert merge(BASE, BASE, ("value",)) == (BASE, [])


def test_an_added_field_is_appended_as_optional():
    new = struct(("id", T.LongType(), False), ("email", T.StringType(), False),
                 ("name", T.StringType(), False), ("qty", T.IntegerType(), True))
    merged, changes = merge(BASE, new, ("value",))
    assert merged.names == ["id", "name", "qty", "email"]
    assert merged["email"].nullable
    assert changes == [Change("add", ("value", "email"))]


@pytest.mark.parametrize("old, new", [(T.IntegerType(), T.LongType()), (T.IntegerType(), T.DoubleType()),
                                      (T.LongType(), T.DoubleType()), (T.FloatType(), T.DoubleType()),
                                      (T.DecimalType(10, 2), T.DecimalType(12, 2))])
def test_avro_promotions_widen(old, new):
    merged, changes = merge(struct(("x", old, True)), struct(("x", new, True)), ("value",))
    assert merged["x"].dataType == new
    assert changes == [Change("widen", ("value", "x"))]


@pytest.mark.parametrize("old, new", [(T.StringType(), T.IntegerType()), (T.LongType(), T.IntegerType()),
                                      (T.DoubleType(), T.FloatType()), (T.DecimalType(10, 2), T.DecimalType(12, 3))])
def test_other_type_changes_are_incompatible(old, new):
    with pytest.raises(IncompatibleSchemaError, match=r"value\.x: type changed from"):
        merge(struct(("x", old, True)), struct(("x", new, True)), ("value",))


def test_removing_a_required_field_is_incompatible_but_an_optional_one_is_not():
    with pytest.raises(IncompatibleSchemaError, match=r"value\.name: a required field the table keeps was removed"):
        merge(BASE, struct(("id", T.LongType(), False), ("qty", T.IntegerType(), True)), ("value",))
    merged, changes = merge(BASE, struct(("id", T.LongType(), False), ("name", T.StringType(), False)), ("value",))
    assert merged == BASE and changes == []


def test_a_required_field_may_become_optional():
    merged, changes = merge(BASE, struct(("id", T.LongType(), False), ("name", T.StringType(), True),
                                         ("qty", T.IntegerType(), True)), ("value",))
    assert merged["name"].nullable
    assert changes == [Change("nullable", ("value", "name"))]


def test_nested_changes_name_their_path():
    old = struct(("after", struct(("tags", T.ArrayType(struct(("t", T.IntegerType(), False)), False), True)), True))
    new = struct(("after", struct(("tags", T.ArrayType(struct(("t", T.StringType(), False)), False), True)), True))
    with pytest.raises(IncompatibleSchemaError, match=r"value\.after\.tags\.element\.t"):
        merge(old, new, ("value",))


@pytest.mark.parametrize("sql", ["select * from batch", "select kafka, key, value.after as value from batch",
                                 "select batch.*, 1 as extra from batch"])
def test_shapers_that_keep_kafka(sql):
    check_shaper(sql, "s.sql")


@pytest.mark.parametrize("sql, message", [
    ("select key, value from batch", "drops the `kafka` column"),
    ("select named_struct('topic', 'x') as kafka, key, value from batch", "rewrites the `kafka` column"),
    ("select *, 1 as kafka from batch", "rewrites the `kafka` column"),
    ("insert into t select * from batch", "must be one SELECT"),
    ("select * from batch; select * from batch", "must be one SELECT"),
    ("select * from batch where value.op <> 'r'", "has WHERE"),
    ("select kafka, first(key) as key from batch group by kafka", "has GROUP"),
    ("select b.* from batch b join other o on b.key = o.key", "has JOIN"),
    ("select distinct * from batch", "has DISTINCT"),
])
def test_shapers_that_touch_kafka_are_refused(sql, message):
    with pytest.raises(ShaperError, match=message):
        check_shaper(sql, "s.sql")
