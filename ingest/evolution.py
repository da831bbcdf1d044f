"""Schema evolution of a raw table, like Kafka Connect's auto.evolve.

A new writer schema may add fields, make a required field optional, or widen
a type along Avro's promotion rules (int -> long/float/double, long ->
float/double, float -> double, decimal precision up at the same scale). Any
other change -- a type changed to an unrelated one, or a required field the
table keeps removed -- is incompatible: ingest stops before that message.

`merge` is pure (Spark types in, Spark type out) so it is unit-tested without
Spark; `conform` builds the Column that reshapes a decoded batch to the
table's type.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import types as T


class IncompatibleSchemaError(ValueError):
    """The new type cannot be written into the table's column; `path` names the field."""

    def __init__(self, path: tuple[str, ...], reason: str):
        super().__init__(f"{'.'.join(path)}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class Change:
    """One step the table takes to accept the new schema."""

    kind: str  # "add", "widen" or "nullable"
    path: tuple[str, ...]  # e.g. ("value", "after", "email"); Delta's "element"/"value" inside arrays/maps

    def __str__(self) -> str:
        return f"{self.kind} {'.'.join(self.path)}"


# Avro's type promotions, as Spark types (spark-avro maps int/long/float/double 1:1).
PROMOTIONS: dict[type, tuple[type, ...]] = {
    T.IntegerType: (T.LongType, T.FloatType, T.DoubleType),
    T.LongType: (T.FloatType, T.DoubleType),
    T.FloatType: (T.DoubleType,),
}


def merge(table: T.DataType, new: T.DataType, path: tuple[str, ...], changes: list[Change] | None = None
          ) -> tuple[T.DataType, list[Change]]:
    """The type that holds both the table's rows and the new schema's, and the changes that get there."""
    changes = [] if changes is None else changes
    if isinstance(table, T.StructType) and isinstance(new, T.StructType):
        incoming = {f.name: f for f in new.fields}
        fields = []
        for old in table.fields:
            sub = (*path, old.name)
            update = incoming.pop(old.name, None)
            if update is None:
                if not old.nullable:
                    raise IncompatibleSchemaError(sub, "a required field the table keeps was removed")
                fields.append(old)
                continue
            merged_type, _ = merge(old.dataType, update.dataType, sub, changes)
            nullable = old.nullable or update.nullable
            if nullable and not old.nullable:
                changes.append(Change("nullable", sub))
            fields.append(T.StructField(old.name, merged_type, nullable, old.metadata))
        for added in incoming.values():
            # Rows already in the table have no value for it, so it is optional there.
            changes.append(Change("add", (*path, added.name)))
            fields.append(T.StructField(added.name, added.dataType, True))
        return T.StructType(fields), changes
    if isinstance(table, T.ArrayType) and isinstance(new, T.ArrayType):
        element, _ = merge(table.elementType, new.elementType, (*path, "element"), changes)
        if new.containsNull and not table.containsNull:
            changes.append(Change("nullable", (*path, "element")))
        return T.ArrayType(element, table.containsNull or new.containsNull), changes
    if isinstance(table, T.MapType) and isinstance(new, T.MapType):
        merge(table.keyType, new.keyType, (*path, "key"), changes)
        value, _ = merge(table.valueType, new.valueType, (*path, "value"), changes)
        if new.valueContainsNull and not table.valueContainsNull:
            changes.append(Change("nullable", (*path, "value")))
        return T.MapType(table.keyType, value, table.valueContainsNull or new.valueContainsNull), changes
    if table == new:
        return table, changes
    if isinstance(table, T.DecimalType) and isinstance(new, T.DecimalType):
        if new.scale == table.scale and new.precision >= table.precision:
            changes.append(Change("widen", path))
            return new, changes
    elif isinstance(new, PROMOTIONS.get(type(table), ())):
        changes.append(Change("widen", path))
        return new, changes
    raise IncompatibleSchemaError(
        path, f"type changed from {table.simpleString()} to {new.simpleString()}, which does not widen it")


def only_nullability(source: T.DataType, target: T.DataType) -> bool:
    """Whether `target` is `source` with some fields (array elements, map values) made nullable, nothing else.

    The usual case of a table that exists: Delta reads every column back nullable, so the table's
    type differs from the writer schema's in nullability alone.
    """
    if isinstance(source, T.StructType) and isinstance(target, T.StructType):
        return len(source.fields) == len(target.fields) and all(
            s.name == t.name and (t.nullable or not s.nullable) and only_nullability(s.dataType, t.dataType)
            for s, t in zip(source.fields, target.fields))
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType):
        return (target.containsNull or not source.containsNull) and only_nullability(source.elementType,
                                                                                      target.elementType)
    if isinstance(source, T.MapType) and isinstance(target, T.MapType):
        return (source.keyType == target.keyType and (target.valueContainsNull or not source.valueContainsNull)
                and only_nullability(source.valueType, target.valueType))
    return source == target


def conform(column, source: T.DataType, target: T.DataType):
    """A Column that turns `column` of type `source` into `target` (a merge of it), by field name."""
    from pyspark.sql import functions as F

    if source == target:
        return column
    if only_nullability(source, target):
        # One cast of the whole value, not a struct rebuilt field by field: that repeats `column`
        # (from_avro, on ingest) once per field, which made a batch into an existing table 6x slower
        # than into a new one (bench/ingest_warm.py: 66 s against 10.6 s for 1,000,000 events).
        return column.cast(target)
    if isinstance(target, T.StructType) and isinstance(source, T.StructType):
        present = {f.name: f.dataType for f in source.fields}
        members = [
            (conform(column[f.name], present[f.name], f.dataType) if f.name in present
             else F.lit(None).cast(f.dataType)).alias(f.name)
            for f in target.fields
        ]
        return F.when(column.isNull(), F.lit(None).cast(target)).otherwise(F.struct(*members))
    if isinstance(target, T.ArrayType) and isinstance(source, T.ArrayType):
        return F.transform(column, lambda x: conform(x, source.elementType, target.elementType))
    if isinstance(target, T.MapType) and isinstance(source, T.MapType):
        return F.transform_values(column, lambda _, v: conform(v, source.valueType, target.valueType))
    return column.cast(target)
