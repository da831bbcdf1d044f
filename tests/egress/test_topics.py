"""produce / consume / ls on the real broker and registry."""

from __future__ import annotations

import io
import json

import pytest

from cli import main as cli
from zync import kafka_client, topics
from zync.errors import ZyncError
from zync.wire import Registry


def test_produce_infers_optional_fields_registers_them_and_creates_the_topic(target, tmp_path):
    topic = "topics_Inferred"
    lines = [{"key": {"id": 1}, "value": {"id": 1, "name": "a", "tags": ["x"]}},
             {"key": {"id": 2}, "value": {"id": 2, "amount": 2, "nested": {"b": True}}},
             {"key": {"id": 3}, "value": {"id": 3, "amount": 2.5}},
             {"key": {"id": 4}, "value": None}]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    assert not kafka_client.topic_exists(target, topic)
    assert cli.main(["produce", "--topic", topic, "--partitions", "3", str(source)]) == 0
    assert kafka_client.partitions(target, topic) == [0, 1, 2]
    registry = Registry(target.schema_registry)
    value_schema = json.loads(registry.client.get_latest_version(f"{topic}-value").schema.schema_str)
    fields = {f["name"]: f for f in value_schema["fields"]}
    assert list(fields) == ["id", "name", "tags", "amount", "nested"]
    assert all(f["default"] is None and f["type"][0] == "null" for f in fields.values())
    assert fields["amount"]["type"] == ["null", "double"]  # 2 and 2.5: a JSON number seen as both
    consumed = sorted(topics.consume(target, topic, from_beginning=True, max_records=4), key=lambda r: r["key"]["id"])
    assert [r["value"] for r in consumed] == [
        {"id": 1, "name": "a", "tags": ["x"], "amount": None, "nested": None},
        {"id": 2, "name": None, "tags": None, "amount": 2.0, "nested": {"b": True}},
        {"id": 3, "name": None, "tags": None, "amount": 2.5, "nested": None},
        None]
    assert {r["kafka"]["partition"] for r in consumed} <= {0, 1, 2}


def test_produce_with_schema_files_and_consume_from_a_partition_and_offset(target, tmp_path, capsys):
    topic = "topics_Given"
    key_schema = tmp_path / "key.avsc"
    key_schema.write_text(json.dumps("string"))
    value_schema = tmp_path / "value.avsc"
    value_schema.write_text(json.dumps({"type": "record", "name": "V", "fields": [
        {"name": "n", "type": "int"}, {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}))
    records = [{"key": f"k{i}", "value": {"n": i, "when": 1_700_000_000_000 + i}} for i in range(5)]
    assert topics.produce(target, topic, records, key_schema, value_schema) == 5
    assert cli.main(["consume", "--topic", topic, "--partition", "0", "--offset", "2", "--max", "2"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out == [
        {"kafka": {"topic": topic, "partition": 0, "offset": 2}, "key": "k2",
         "value": {"n": 2, "when": "2023-11-14T22:13:20.002000+00:00"}},
        {"kafka": {"topic": topic, "partition": 0, "offset": 3}, "key": "k3",
         "value": {"n": 3, "when": "2023-11-14T22:13:20.003000+00:00"}}]


def test_consume_decodes_each_message_with_its_writer_schema(target):
    topic = "topics_Evolving"
    topics.produce(target, topic, [{"key": None, "value": {"a": 1}}])
    topics.produce(target, topic, [{"key": None, "value": {"a": 2, "b": "new"}}])
    assert [r["value"] for r in topics.consume(target, topic, from_beginning=True, exit_after=0.0)] == [
        {"a": 1}, {"a": 2, "b": "new"}]


def test_consume_exit_after_waits_for_new_records_only(target):
    topic = "topics_Idle"
    topics.produce(target, topic, [{"key": None, "value": {"a": 1}}])
    assert list(topics.consume(target, topic, exit_after=0.3)) == []  # only new records, and none came


def test_produce_refuses_bad_lines_and_conflicting_types(target):
    with pytest.raises(ZyncError, match=r"in.jsonl:2: not JSON"):
        topics.read_json_lines(io.StringIO('{"key": 1, "value": 1}\n{oops\n'), "in.jsonl")
    with pytest.raises(ZyncError, match=r"topics_Conflict_value\.x is a long in one record and a string in another"):
        topics.produce(target, "topics_Conflict", [{"value": {"x": 1}}, {"value": {"x": "one"}}])
    assert not kafka_client.topic_exists(target, "topics_Conflict")


def test_ls_lists_subjects_versions_and_ids(target, capsys):
    topic = "topics_Listed"
    topics.produce(target, topic, [{"key": {"k": 1}, "value": {"a": 1}}])
    topics.produce(target, topic, [{"key": {"k": 1}, "value": {"a": 1, "b": 2}}])
    assert cli.main(["ls"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines() if line.startswith(f"{topic}-")]
    registry = Registry(target.schema_registry)
    ids = [registry.client.get_version(f"{topic}-value", v).schema_id for v in (1, 2)]
    assert lines == [[f"{topic}-key", "version 1", f"id {registry.client.get_version(f'{topic}-key', 1).schema_id}"],
                     [f"{topic}-value", "version 1", f"id {ids[0]}"],
                     [f"{topic}-value", "version 2", f"id {ids[1]}"]]
    assert ids[0] != ids[1]
