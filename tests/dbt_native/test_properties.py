"""The generated properties and sources YAML: pure logic, no services."""

from __future__ import annotations

from pathlib import Path

import yaml

from compiler import compile_transforms

TWO_OUTPUTS = {
    "a.yml": """\
inputs:
  - {topic: Orders, table: raw_orders}
  - {topic: Lines, table: raw_lines}
output: {topic: OrderLines, model: order_lines}
transforms:
  - type: denorm
    left: Orders
    right: Lines
    join-on: left.value.after.id = right.value.after.order_id
    out: OrderLines
    key: left.key
    value: {id: left.value.after.id, qty: right.value.after.qty}
""",
    "b.yml": """\
inputs:
  - {topic: Orders, table: raw_orders}
output: {topic: OrderEvents, model: order_events}
transforms:
  - type: stateless
    in: Orders
    out: OrderEvents
    key: in.key
    value: {id: in.value.after.id}
""",
}


def generated(tmp_path: Path) -> dict[str, dict]:
    paths = []
    for name, text in TWO_OUTPUTS.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    return {str(f.path): yaml.safe_load(f.text) for f in compile_transforms(paths, tmp_path) if f.path.suffix == ".yml"}


def test_each_output_gets_the_four_checks_over_its_own_inputs(tmp_path):
    files = generated(tmp_path)
    (model,) = files["models/outputs/order_lines.yml"]["models"]
    tests = {t["test_name"]: t for t in model["data_tests"]}
    assert set(tests) == {"zync_one_done_row_per_input_record", "zync_contiguous_output_offsets",
                          "zync_done_rows_have_input", "zync_pending_age"}
    assert tests["zync_done_rows_have_input"]["arguments"]["inputs"] == [
        {"topic": "Orders", "relation": "source('raw', 'raw_orders')"},
        {"topic": "Lines", "relation": "source('raw', 'raw_lines')"},
    ]
    assert tests["zync_contiguous_output_offsets"]["arguments"] == {"output_topic": "OrderLines"}
    assert tests["zync_pending_age"]["config"] == {"severity": "warn"}
    assert all(t["name"].startswith("order_lines__") for t in model["data_tests"])
    (other,) = files["models/outputs/order_events.yml"]["models"]
    other_inputs = {t["test_name"]: t for t in other["data_tests"]}["zync_done_rows_have_input"]["arguments"]["inputs"]
    assert other_inputs == [{"topic": "Orders", "relation": "source('raw', 'raw_orders')"}]


def test_each_output_topic_is_an_exposure_fed_by_its_model(tmp_path):
    files = generated(tmp_path)
    for model, topic in (("order_lines", "OrderLines"), ("order_events", "OrderEvents")):
        (exposure,) = files[f"models/outputs/{model}.yml"]["exposures"]
        assert exposure["depends_on"] == [f"ref('{model}')"]
        assert exposure["meta"]["zync_output_topic"] == topic
        assert exposure["name"].isidentifier()


def test_a_raw_table_read_by_two_outputs_is_one_source_listing_both(tmp_path):
    sources = generated(tmp_path)["models/raw/__sources.yml"]["sources"][0]
    tables = {t["name"]: t for t in sources["tables"]}
    assert set(tables) == {"raw_orders", "raw_lines", "raw_orders__dead_letters", "raw_lines__dead_letters"}
    assert tables["raw_orders"]["meta"] == {"zync_topic": "Orders", "zync_read_by": ["order_lines", "order_events"]}
    assert {c["name"] for c in tables["raw_lines"]["columns"]} == {"kafka", "key", "value"}
    # Beside each raw table, its dead-letter table (errors.tolerance: all), with a test that warns.
    dead = tables["raw_orders__dead_letters"]
    assert dead["meta"] == {"zync_dead_letters_of": "Orders"}
    assert dead["data_tests"] == [{"name": "raw_orders__no_dead_letters", "test_name": "zync_no_dead_letters",
                                   "config": {"severity": "warn"}}]


def test_no_yaml_anchors_in_the_generated_files(tmp_path):
    for name, text in TWO_OUTPUTS.items():
        (tmp_path / name).write_text(text)
    files = compile_transforms([tmp_path / n for n in TWO_OUTPUTS], tmp_path)
    assert not any("&id" in f.text or "*id" in f.text for f in files)
