"""The Avro writer schemas of an output topic: one per value field set, one for the key.

A partial update carries exactly the fields in its `fields` column, so each
distinct field set gets its own record schema, derived from the value
column's Spark type. Every field is optional with a null default: any two
shapes of one subject then read each other's data, so successive versions
pass the registry's BACKWARD, FORWARD and FULL rules alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from zync.avro_types import AvroTypeError, avro_schema_for_struct, spark_to_avro
from zync.errors import ZyncError
from zync.wire import Registry, WriterSchema


def record_name(topic: str, part: str) -> str:
    """An Avro name for a topic's key or value record (Avro names are [A-Za-z_][A-Za-z0-9_]*)."""
    safe = "".join(c if c.isalnum() else "_" for c in topic)
    return f"{'_' if safe[:1].isdigit() else ''}{safe}_{part}"


@dataclass(frozen=True)
class Shape:
    """One writer schema and the top-level value fields it carries (None: the whole column)."""

    fields: tuple[str, ...] | None
    writer: WriterSchema

    @property
    def schema_json(self) -> str:
        return json.dumps(self.writer.schema)


class TopicSchemas:
    """Derives and registers T-key / T-value schemas, cached for the life of an egress."""

    def __init__(self, registry: Registry, topic: str):
        self.registry = registry
        self.topic = topic
        self._cache: dict[tuple[str, str, tuple[str, ...] | None], Shape] = {}

    def _register(self, part: str, spark_type, fields: tuple[str, ...] | None) -> Shape:
        from pyspark.sql import types as T

        key = (part, spark_type.json(), fields)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        name = record_name(self.topic, part)
        try:
            if isinstance(spark_type, T.StructType):
                schema: Any = avro_schema_for_struct(spark_type, name=name, namespace="zync",
                                                     only_fields=list(fields) if fields is not None else None)
            else:
                if fields is not None:
                    raise ZyncError(f"{self.topic}: the {part} column is {spark_type.simpleString()}, not a "
                                    "struct, so out rows cannot name `fields` for it")
                schema = spark_to_avro(spark_type, name)
        except AvroTypeError as e:
            raise ZyncError(f"{self.topic}: cannot derive an Avro schema for the {part} column: {e}") from None
        shape = Shape(fields, self.registry.register(f"{self.topic}-{part}", schema))
        self._cache[key] = shape
        return shape

    def key(self, spark_type) -> Shape:
        return self._register("key", spark_type, None)

    def value(self, spark_type, fields: tuple[str, ...] | None) -> Shape:
        from pyspark.sql import types as T

        if fields is not None and isinstance(spark_type, T.StructType):
            unknown = [f for f in fields if f not in spark_type.names]
            if unknown:
                raise ZyncError(
                    f"out rows for {self.topic} name fields {unknown} that the value column lacks "
                    f"(its fields: {spark_type.names}); fix the model that writes `fields`"
                )
            # Column order, not the order `fields` lists them in: one schema per set.
            fields = tuple(n for n in spark_type.names if n in fields)
        return self._register("value", spark_type, fields)
