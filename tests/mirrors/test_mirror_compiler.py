"""The `mirrors:` file -> dbt model compiler: pure logic, no services."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from compiler import compile_transforms, transform_files
from compiler.spec import TransformError

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


def test_expressions_are_checked_quoted_and_passed_to_the_macros(tmp_path):
    sql = compile_files(tmp_path, mirrors=GOOD)["models/mirrors/m_orders.sql"]
    assert "materialized='zync_mirror'" in sql
    assert "['ID', '`key`.`ID`']" in sql
    assert "['total', '`value`.`after`.`price` * `value`.`after`.`qty`']" in sql
    assert "'source_ts': '`value`.`source`.`ts_ms`'" in sql
    assert "'delete': 'soft'" in sql
    assert "{{ zync_mirror_changes(source('raw', 'raw_shop_orders')) }}" in sql


def test_defaults_are_found_at_run_time(tmp_path):
    sql = compile_files(tmp_path, mirrors=GOOD)["models/mirrors/m_items.sql"]
    for setting in ("'primary_key': none", "'columns': none", "'source_ts': none", "'delete': 'hard'"):
        assert setting in sql
    assert "source('raw', 'raw_items')" in sql


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
