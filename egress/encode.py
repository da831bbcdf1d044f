"""Avro encoding in the JVM: Spark's to_avro per field-set group, the wire header prepended.

Encoding row by row in Python (fastavro) caps egress far below what the
producer can send; spark-avro's to_avro encodes in the JVM and hands Python
finished Confluent wire-format bytes through Arrow, a batch at a time.
"""

from __future__ import annotations

from egress.schemas import Shape
from zync.wire import header


def _wire(shape: Shape, data):
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import to_avro

    return F.concat(F.lit(bytearray(header(shape.writer.id))), to_avro(data, shape.schema_json))


def key_column(frame, shape: Shape | None):
    from pyspark.sql import functions as F

    if shape is None:
        return F.lit(None).cast("binary")
    return F.when(F.col("key").isNull(), F.lit(None).cast("binary")).otherwise(_wire(shape, F.col("key")))


def value_column(frame, shapes: dict[tuple[str, ...] | None, Shape], groups: list[tuple[list[str] | None, tuple[str, ...] | None]]):
    """CASE over the rows' `fields` arrays: each group encodes only its own fields.

    groups pairs each distinct `fields` array found in the rows (as stored) with
    the canonical field set of its shape.
    """
    from pyspark.sql import functions as F

    has_fields = "fields" in frame.columns
    column = F.when(F.col("value").isNull(), F.lit(None).cast("binary"))
    for stored, canonical in groups:
        shape = shapes[canonical]
        if canonical is None:
            data = F.col("value")
        else:
            data = F.struct(*[F.col("value").getField(n).alias(n) for n in canonical])
        if not has_fields:
            condition = F.lit(True)
        elif stored is None:
            condition = F.col("fields").isNull()
        else:
            condition = F.col("fields") == F.array(*[F.lit(n) for n in stored]) if stored else F.size("fields") == 0
        column = column.when(condition, _wire(shape, data))
    return column
