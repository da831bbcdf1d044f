"""Mirror entries naming many topics (`topics:` and a `name:` template), compiled against a topic list.

Pure compiler tests: the broker's topics are given as a list, as `zync etl
compile` and `zync run` pass the broker's. The live side (a topic that
appears while `zync run` runs) is tests/service/test_whole_database.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from compiler import compile_transforms, write_outputs
from compiler.mirrors import previous_pattern_topics, topic_parts
from compiler.spec import TransformError

TOPICS = ["pg.public.customers", "pg.public.Order_Lines", "pg.public.orders", "pg.sales.orders", "other", "pg.public"]
PATTERN = """\
mirrors:
  - topics: 'pg\\.public\\..*'
    name: '{table}_mirror'
    delete: soft
  - model: orders_by_hand
    topic: pg.public.orders
    primary-key: [id]
"""


def compile_with(tmp_path: Path, text: str, topics=TOPICS, write: bool = False) -> dict[str, str]:
    path = tmp_path / "transforms" / "db.yml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    files = compile_transforms([path], tmp_path, topics=lambda: topics)
    if write:
        write_outputs(files, tmp_path)
    return {str(f.path): f.text for f in files}


def mirrored(files: dict[str, str]) -> dict[str, str]:
    """{model: topic} of the generated mirrors."""
    found = {}
    for path, text in files.items():
        if path.startswith("models/mirrors/") and path.endswith(".yml"):
            model = yaml.safe_load(text)["models"][0]
            found[model["name"]] = model["meta"]["zync_mirror_topic"]
    return found


def test_every_matching_topic_gets_a_mirror_and_a_single_entry_overrides_the_pattern(tmp_path):
    files = compile_with(tmp_path, PATTERN)
    assert mirrored(files) == {"customers_mirror": "pg.public.customers", "order_lines_mirror": "pg.public.Order_Lines",
                               "orders_by_hand": "pg.public.orders"}
    # The pattern's defaults (soft deletes from the entry, the Kafka key, value.after) and its raw tables' sources.
    assert "'delete': 'soft'" in files["models/mirrors/customers_mirror.sql"]
    assert "zync_mirror_typed_after(source('raw', 'raw_pg_public_customers'), notes=raw_notes)" in files["models/mirrors/customers_mirror.sql"]
    assert "'delete': 'hard'" in files["models/mirrors/orders_by_hand.sql"]
    sources = yaml.safe_load(files["models/raw/__sources.yml"])["sources"][0]["tables"]
    assert {t["meta"]["zync_topic"] for t in sources if "zync_topic" in t["meta"]} == {
        "pg.public.customers", "pg.public.Order_Lines", "pg.public.orders"}
    # Each mirror gets its data tests, as a single-topic entry's mirror does.
    tests = yaml.safe_load(files["models/mirrors/customers_mirror.yml"])["models"][0]["data_tests"]
    assert [next(iter(t)) for t in tests] == ["zync_mirror_primary_key", "zync_mirror_matches_raw"]


def test_name_templates_take_the_topics_parts_and_the_expressions_named_groups(tmp_path):
    assert topic_parts("dbserver1.inventory.OrderLines") == {
        "topic": "dbserver1_inventory_order_lines", "server": "dbserver1", "schema": "inventory", "table": "order_lines"}
    files = compile_with(tmp_path, "mirrors:\n  - topics: 'pg\\.(?P<db>\\w+)\\.orders'\n    name: 'm_{db}_{schema}_{table}'\n")
    assert mirrored(files) == {"m_public_public_orders": "pg.public.orders", "m_sales_sales_orders": "pg.sales.orders"}


def test_two_topics_that_would_share_a_name_are_refused_naming_both(tmp_path):
    with pytest.raises(TransformError) as caught:
        compile_with(tmp_path, "mirrors:\n  - topics: 'pg\\..*\\.orders'\n")
    message = str(caught.value)
    assert "db.yml:2:" in message and "'pg.public.orders'" in message and "'pg.sales.orders'" in message
    assert "name:" in message
    # and so is a pattern's name that an explicit entry already has
    with pytest.raises(TransformError, match="both be mirrored as 'customers'"):
        compile_with(tmp_path, "mirrors:\n  - topics: 'pg\\.public\\.c.*'\n  - {model: customers, topic: other}\n")


@pytest.mark.parametrize("text, message", [
    ("mirrors:\n  - topics: 'pg\\.(unclosed'\n", "not a regular expression"),
    ("mirrors:\n  - topics: 'pg\\..*'\n    name: 'all_tables'\n", "must use placeholders"),
    ("mirrors:\n  - topics: 'pg\\..*'\n    name: '{tabel}'\n", "must use placeholders"),
    ("mirrors:\n  - topics: 'pg\\..*'\n    name: '{table}-copy'\n", "is not a plain SQL name"),
    ("mirrors:\n  - topics: 'pg\\..*'\n    columns: {a: value.after.a}\n", "unknown setting `columns`"),
    ("mirrors:\n  - topics: 'pg\\..*'\n    delete: gentle\n", "delete must be hard or soft"),
])
def test_a_bad_pattern_entry_names_the_file_line_and_problem(tmp_path, text, message):
    with pytest.raises(TransformError) as caught:
        compile_with(tmp_path, text)
    assert "db.yml:" in str(caught.value) and message in str(caught.value)


def test_a_topic_gone_from_the_broker_keeps_its_generated_mirror(tmp_path):
    compile_with(tmp_path, PATTERN, write=True)
    assert previous_pattern_topics(tmp_path) == {"pg.public.customers", "pg.public.Order_Lines"}
    # The table is dropped from the connector and its topic deleted: the mirror and its source stay.
    files = compile_with(tmp_path, PATTERN, topics=[t for t in TOPICS if t != "pg.public.customers"])
    assert mirrored(files)["customers_mirror"] == "pg.public.customers"


def test_a_pattern_entry_without_a_topic_list_is_refused(tmp_path):
    path = tmp_path / "db.yml"
    path.write_text(PATTERN)
    with pytest.raises(TransformError, match="needs the broker's topic list"):
        compile_transforms([path], tmp_path)
