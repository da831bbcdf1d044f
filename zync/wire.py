"""Avro in the Confluent wire format (magic byte 0, 4-byte schema id, Avro binary), schemas in a registry."""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import fastavro
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from zync.errors import ZyncError

MAGIC = 0
HEADER = struct.Struct(">bI")
# Where the Avro body starts, as a 1-based position for SQL's substring() over a message's bytes.
BODY_POSITION = HEADER.size + 1


def header(schema_id: int) -> bytes:
    """The 5 bytes every message written with this schema id starts with."""
    return HEADER.pack(MAGIC, schema_id)


class DecodeError(ZyncError):
    """A Kafka message that is not Avro in the Confluent wire format, or whose schema is unknown."""


@dataclass(frozen=True)
class WriterSchema:
    id: int
    schema: Any  # the schema as JSON (dict, list or str)
    parsed: Any  # fastavro's parsed form


class Registry:
    """A schema-registry client with the schema caches the hot loops need."""

    def __init__(self, settings: dict[str, Any]):
        self.client = SchemaRegistryClient(dict(settings))
        # Shown in messages: without any user:password@ part a URL may carry.
        url = urlsplit(str(settings["url"]))
        self.url = urlunsplit(url._replace(netloc=url.hostname + (f":{url.port}" if url.port else ""))) \
            if url.hostname else str(settings["url"])
        self._by_id: dict[int, WriterSchema] = {}
        self._registered: dict[tuple[str, str], WriterSchema] = {}

    def schema(self, schema_id: int) -> WriterSchema:
        cached = self._by_id.get(schema_id)
        if cached is None:
            try:
                text = self.client.get_schema(schema_id).schema_str
            except SchemaRegistryError as e:
                raise DecodeError(f"schema id {schema_id} is not in the registry at {self.url}: {e}") from None
            schema = json.loads(text)
            cached = WriterSchema(schema_id, schema, fastavro.parse_schema(schema))
            self._by_id[schema_id] = cached
        return cached

    def register(self, subject: str, schema: Any) -> WriterSchema:
        """Register (or find) a schema under a subject; cached per subject and schema text."""
        text = json.dumps(schema, sort_keys=True)
        cached = self._registered.get((subject, text))
        if cached is None:
            try:
                schema_id = self.client.register_schema(subject, Schema(json.dumps(schema), "AVRO"))
            except SchemaRegistryError as e:
                raise ZyncError(
                    f"the registry at {self.url} refused a new schema for subject {subject}: {e.error_message}\n"
                    f"    schema: {json.dumps(schema)}"
                ) from None
            except Exception as e:  # noqa: BLE001 - the HTTP client's connection errors
                raise ZyncError(f"cannot reach the schema registry at {self.url}: {type(e).__name__}; "
                                "is it running (`zync up` for the local target), and is the URL right?") from None
            cached = WriterSchema(schema_id, schema, fastavro.parse_schema(schema))
            self._registered[(subject, text)] = cached
            self._by_id[schema_id] = cached
        return cached

    def decode(self, data: bytes | None, where: str, record_names: bool = False) -> tuple[int | None, Any]:
        """(schema id, datum) of a wire-format message; (None, None) for a null (tombstone).

        record_names: records in unions of several records come back as (full name, dict),
        which testkit.avro_values.value_converter needs to pick the union member.
        """
        schema_id = schema_id_of(data, where)
        if schema_id is None:
            return None, None
        writer = self.schema(schema_id)
        try:
            return schema_id, fastavro.schemaless_reader(
                io.BytesIO(data[HEADER.size:]), writer.parsed, None,
                return_record_name=record_names, return_record_name_override=record_names)
        except Exception as e:  # noqa: BLE001 - fastavro raises many kinds for corrupt bytes
            raise DecodeError(f"{where}: cannot decode with writer schema id {schema_id}: {e}") from None


def schema_id_of(data: bytes | None, where: str) -> int | None:
    """The writer schema id in a wire-format header; None for a null (tombstone)."""
    if data is None:
        return None
    if len(data) < HEADER.size or data[0] != MAGIC:
        raise DecodeError(
            f"{where}: not Avro in the Confluent wire format (it must start with magic byte 0 and a "
            f"4-byte schema id; it starts with {bytes(data[:5])!r}). Fix the producer, or ingest from a later offset."
        )
    return HEADER.unpack_from(data)[1]


def encode(writer: WriterSchema, datum: Any) -> bytes:
    out = io.BytesIO()
    out.write(header(writer.id))
    fastavro.schemaless_writer(out, writer.parsed, datum)
    return out.getvalue()
