"""The `mirrors:` file -> dbt model compiler: pure logic, no services."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import sqlglot
import yaml
from sqlglot import exp

from compiler import compile_transforms, transform_files
from compiler.spec import TransformError
from tests.unit.generated_sql import projection, same

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
mirrors:
  - model: m_orders
    topic: ShopOrders
    delete: soft
    primary-key: [ID]
    source-ts: value.source.ts_ms
    columns:
      customer: value.after.customer
      total: value.after.price * value.after.qty
  - model: m_items
    topic: Items
"""
TRANSFORM = """\
inputs:
  - {topic: Items, table: raw_items}
output: {topic: Out, model: out_model}
transforms:
  - type: stateless
    in: Items
    out: Out
    key: in.key
    value: {id: in.value.after.id}
"""


def compile_files(tmp_path: Path, **files: str) -> dict[str, str]:
    paths = []
    for name, text in files.items():
        path = tmp_path / f"{name}.yml"
        path.write_text(text)
        paths.append(path)
    return {str(f.path): f.text for f in compile_transforms(paths, tmp_path)}


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(TransformError) as caught:
        compile_files(tmp_path, mirrors=text)
    return str(caught.value)


def test_one_model_and_properties_per_mirror_under_models_mirrors(tmp_path):
    files = compile_files(tmp_path, mirrors=GOOD)
    assert sorted(files) == ["models/mirrors/m_items.sql", "models/mirrors/m_items.yml",
                             "models/mirrors/m_orders.sql", "models/mirrors/m_orders.yml",
                             "models/raw/__sources.yml"]


def _as_call(match: re.Match) -> str:
    """A macro's call in a generated model as a function of the raw table and the variables it is handed."""
    handed = re.sub(r"\w+=", "", match[3])
    return f"{match[1]}(source__{match[2]}{handed})"


def mirror_model(text: str) -> tuple[dict, exp.Select]:
    """A generated mirror model as (its meta.zync_mirror settings, its select with the Jinja calls as functions)."""
    config = re.search(r"meta=(\{.*?\}\}),\n", text)
    assert config, "the model's config has no meta"
    settings = ast.literal_eval(config.group(1).replace("none", "None"))["zync_mirror"]
    body = re.sub(r"\{#.*?#\}", "", text, flags=re.S)
    body = re.sub(r"\{\{ config\(.*?\) \}\}", "", body, flags=re.S)
    body = re.sub(r"\{\{ source\('raw', '(\w+)'\) \}\}", r"source__\1", body)
    body = re.sub(r"\{%-? set (\w+) = (zync_\w+)\(source\('raw', '(\w+)'\)\) %\}", "", body)
    body = re.sub(r"\{\{ (zync_\w+)\(source\('raw', '(\w+)'\)((?:, \w+=\w+)*)\) \}\}", _as_call, body)
    assert "{{" not in body, body
    return settings, sqlglot.parse_one(body, read="spark")


def test_expressions_are_checked_and_quoted_in_the_models_select(tmp_path):
    settings, select = mirror_model(compile_files(tmp_path, mirrors=GOOD)["models/mirrors/m_orders.sql"])
    assert settings == {"topic": "ShopOrders", "delete": "soft", "primary_key": ["ID"]}
    columns = projection(select)
    assert list(columns) == ["ID", "customer", "total", "_zync_op", "_zync_source_ts", "_zync_kafka"]
    assert columns["ID"] == same("key.ID")
    assert columns["total"] == same("value.after.price * value.after.qty")
    assert columns["_zync_source_ts"] == same("CAST(value.source.ts_ms AS BIGINT)")
    assert select.find(exp.From).this.name == "source__raw_shop_orders"
    # Only the topic's changes: a tombstone or another op is no change of a row.
    assert same(select.find(exp.Where).this) == same(
        "kafka.topic = 'ShopOrders' AND NOT value IS NULL AND value.op IN ('c', 'r', 'u', 'd')")
    # No SQL is left for the macros in strings: the config's meta holds names only.
    assert "`" not in re.search(r"\{\{ config\(.*?\) \}\}", compile_files(tmp_path, mirrors=GOOD)[
        "models/mirrors/m_orders.sql"], flags=re.S).group(0)


def test_defaults_are_found_at_run_time(tmp_path):
    settings, select = mirror_model(compile_files(tmp_path, mirrors=GOOD)["models/mirrors/m_items.sql"])
    # The materialization asks only value.after's struct for the value columns (`columns: after`).
    assert settings == {"topic": "Items", "delete": "hard", "primary_key": None, "columns": "after"}
    columns = projection(select)
    assert list(columns) == ["zync_mirror_key_fields", "_zync_after", "_zync_op", "_zync_source_ts", "_zync_kafka"]
    # The raw table's field notes are read once, for both the key's and value.after's types, and its
    # columns described once, for the key's names and the source time.
    text = compile_files(tmp_path, mirrors=GOOD)["models/mirrors/m_items.sql"]
    assert text.count("zync_field_notes(source('raw', 'raw_items'))") == 1
    assert text.count("zync_mirror_raw_columns(source('raw', 'raw_items'))") == 1
    assert columns["zync_mirror_key_fields"] == same("zync_mirror_key_fields(source__raw_items, raw_notes, raw_columns)")
    assert columns["_zync_after"] == same("zync_mirror_typed_after(source__raw_items, raw_notes)")
    assert columns["_zync_source_ts"] == same("CAST(zync_mirror_source_ts(source__raw_items, raw_columns) AS BIGINT)")


def test_mirror_tests_get_names_not_sql(tmp_path):
    model = yaml.safe_load(compile_files(tmp_path, mirrors=GOOD)["models/mirrors/m_orders.yml"])["models"][0]
    arguments = {next(iter(t)): t[next(iter(t))]["arguments"] for t in model["data_tests"]}
    assert arguments["zync_mirror_matches_raw"] == {
        "source_relation": "source('raw', 'raw_shop_orders')", "delete": "soft", "primary_key": ["ID"]}


def test_hard_mirrors_get_the_no_deleted_keys_test_and_soft_ones_do_not(tmp_path):
    files = compile_files(tmp_path, mirrors=GOOD)
    tests_of = {}
    for name in ("m_orders", "m_items"):
        model = yaml.safe_load(files[f"models/mirrors/{name}.yml"])["models"][0]
        tests_of[name] = [next(iter(t)) for t in model["data_tests"]]
    assert tests_of["m_items"] == ["zync_mirror_primary_key", "zync_mirror_no_deleted_keys", "zync_mirror_matches_raw"]
    assert tests_of["m_orders"] == ["zync_mirror_primary_key", "zync_mirror_matches_raw"]


def test_mirror_tables_join_the_sources_once(tmp_path):
    files = compile_files(tmp_path, a_transform=TRANSFORM, mirrors=GOOD)
    tables = [t["name"] for t in yaml.safe_load(files["models/raw/__sources.yml"])["sources"][0]["tables"]]
    assert tables == ["raw_items", "raw_items__dead_letters", "raw_shop_orders", "raw_shop_orders__dead_letters"]
    assert "models/outputs/out_model.sql" in files


@pytest.mark.parametrize("text, where, message", [
    (GOOD.replace("delete: soft", "delete: gentle"), ":4:", "delete must be hard or soft"),
    (GOOD.replace("value.after.customer", "value.after.customer +"), ":8:", "not a valid SQL expression"),
    (GOOD.replace("value.after.customer", "1; drop table x"), ":8:", "not statements"),
    (GOOD.replace("value.after.customer", "left.value.after.customer"), ":8:", "does not name a record field"),
    (GOOD.replace("customer:", "_zync_op:"), ":8:", "keeps for itself"),
    (GOOD.replace("customer:", "ID:"), ":8:", "named twice"),
    (GOOD.replace("    topic: Items", "    topic: Items\n    colour: red"), ":12:", "unknown setting `colour`"),
    (GOOD.replace("model: m_items", "model: m_orders"), ":10:", "also defined"),
    (GOOD.replace("primary-key: [ID]", "primary-key: [ID, 'not a name']"), ":5:", "not a plain field name"),
    ("mirrors:\n  - {model: m, topic: T}\ninputs: []\n", ":3:", "a file of their own"),
    ("mirrors: []\n", ":1:", "at least one mirror"),
])
def test_bad_input_names_the_file_line_and_problem(tmp_path, text, where, message):
    text_of_error = error(tmp_path, text)
    assert f"mirrors.yml{where}" in text_of_error
    assert message in text_of_error


def test_nothing_is_written_when_a_mirror_is_bad(tmp_path):
    (tmp_path / "mirrors.yml").write_text(GOOD.replace("delete: soft", "delete: gentle"))
    with pytest.raises(TransformError):
        compile_transforms([tmp_path / "mirrors.yml"], tmp_path)
    assert not (tmp_path / "models").exists()


def test_the_committed_demo_mirror_is_what_the_compiler_writes_now():
    files = compile_transforms(transform_files(ROOT), ROOT)
    mirror_files = [f for f in files if f.path.parts[:2] == ("models", "mirrors")]
    assert {f.path.name for f in mirror_files} == {"invoices_mirror.sql", "invoices_mirror.yml"}
    for f in mirror_files:
        assert (ROOT / f.path).read_text() == f.text, f"{f.path} is stale: run `zync etl compile` and commit"
