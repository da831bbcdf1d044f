"""`history: true` on mirror entries -> history models: pure compiler logic, no services."""

from __future__ import annotations

import pytest
import yaml

from compiler import compile_transforms
from compiler.mirrors import HARD_DELETES, expand_patterns, history_model_name, load_mirrors
from compiler.spec import TransformError

ONE = """\
mirrors:
  - model: people
    topic: pg.public.people
    history: true
  - model: orders
    topic: pg.public.orders
    primary-key: {order_id: key.id}
    columns:
      total: value.after.price * value.after.qty
    history: true
    hard_deletes: new_record
  - model: plain
    topic: pg.public.plain
"""
DELETED_IMAGE = "if(`value`.`op` = 'd', `value`.`before`, `value`.`after`)"


def compiled(tmp_path, text: str) -> dict[str, str]:
    path = tmp_path / "mirrors.yml"
    path.write_text(text)
    return {str(f.path): f.text for f in compile_transforms([path], tmp_path, topics=lambda: ["pg.inv.a", "pg.inv.b"])}


def error(tmp_path, text: str) -> str:
    with pytest.raises(TransformError) as caught:
        compiled(tmp_path, text)
    return str(caught.value)


def test_history_true_adds_a_history_model_named_after_the_mirror(tmp_path):
    files = compiled(tmp_path, ONE)
    names = {p.rsplit("/", 1)[1] for p in files if p.startswith("models/mirrors/")}
    assert {"people_history.sql", "people_history.yml", "orders_history.sql", "orders_history.yml"} <= names
    assert not any(n.startswith("plain_history") for n in names)
    history = files["models/mirrors/people_history.sql"]
    assert "materialized='zync_history'" in history
    assert "tblproperties={'delta.enableDeletionVectors': 'true'}" in history
    assert "'hard_deletes': 'invalidate'" in history and "'mirror': 'people'" in history
    # the rows carry the source position and the transaction id besides the mirror's columns
    assert "zync_history_source_position(source('raw', 'raw_pg_public_people')" in history
    assert "as `_zync_position`" in history and "as `_zync_transaction`" in history
    # the mirror's own model is what it was without history
    assert "_zync_position" not in files["models/mirrors/people.sql"]
    assert history_model_name("people") == "people_history"


def test_new_record_reads_a_deletes_columns_from_before(tmp_path):
    files = compiled(tmp_path, ONE)
    orders = files["models/mirrors/orders_history.sql"]
    assert "'hard_deletes': 'new_record'" in orders
    assert f"{DELETED_IMAGE}\n    ).`price`" in orders and f"{DELETED_IMAGE}\n    ).`qty`" in orders
    assert "`key`.`id` as `order_id`" in orders  # the key is the key's, deleted or not
    # the default columns: the typed image macro, not the mirror's typed value.after
    invalidate = files["models/mirrors/people_history.sql"]
    assert "zync_mirror_typed_after(" in invalidate and DELETED_IMAGE not in invalidate
    people_nr = compiled(tmp_path, ONE.replace("    history: true\n  - model: orders",
                                                "    history: true\n    hard_deletes: new_record\n  - model: orders"))
    assert "zync_history_typed_image(" in people_nr["models/mirrors/people_history.sql"]


def test_history_properties_test_the_versions_and_are_not_taken_for_a_mirror(tmp_path):
    doc = yaml.safe_load(compiled(tmp_path, ONE)["models/mirrors/orders_history.yml"])
    model = doc["models"][0]
    tests = {name: spec["arguments"] for t in model["data_tests"] for name, spec in t.items()}
    assert set(tests) == {"zync_history_no_overlaps", "zync_history_one_current", "zync_history_current_is_mirror"}
    assert tests["zync_history_current_is_mirror"]["mirror"] == "ref('orders')"
    assert all(t["primary_key"] == ["order_id"] for t in tests.values())
    # `zync run` takes a model with zync_mirror_topic in its meta for a mirror (service/project.py)
    assert "zync_mirror_topic" not in model["meta"] and model["meta"]["zync_history_topic"] == "pg.public.orders"
    assert {"valid_from", "valid_to", "is_current", "_zync_op", "_zync_transaction"} <= {c["name"] for c in model["columns"]}


def test_a_pattern_entry_gives_every_matching_topic_a_history(tmp_path):
    files = compiled(tmp_path, """\
mirrors:
  - topics: 'pg\\.inv\\..*'
    name: '{table}_m'
    history: true
    hard_deletes: new_record
""")
    assert {"models/mirrors/a_m_history.sql", "models/mirrors/b_m_history.sql"} <= set(files)
    assert "'hard_deletes': 'new_record'" in files["models/mirrors/b_m_history.sql"]
    assert "zync_history_typed_image(" in files["models/mirrors/b_m_history.sql"]


@pytest.mark.parametrize("entry, message", [
    ("history: yes-please", "history is true or false"),
    ("history: 1", "history is true or false"),
    ("hard_deletes: new_record", "add `history: true`"),
    ("history: false\n    hard_deletes: invalidate", "add `history: true`"),
    ("history: true\n    hard_deletes: ignore", "hard_deletes is invalidate (a delete closes"),
    ("history: true\n    hard-deletes: new_record", "hard-deletes"),
])
def test_bad_history_settings_are_errors_on_their_line(tmp_path, entry, message):
    text = f"mirrors:\n  - model: m\n    topic: T\n    {entry}\n"
    found = error(tmp_path, text)
    assert message in found, found
    assert "mirrors.yml:4" in found or "mirrors.yml:5" in found, found


def test_a_history_name_another_model_has_is_an_error(tmp_path):
    found = error(tmp_path, """\
mirrors:
  - model: people
    topic: A
    history: true
  - model: people_history
    topic: B
""")
    assert "'people_history'" in found and "also defined" in found


def test_a_pattern_whose_history_name_is_taken_is_an_error(tmp_path):
    path = tmp_path / "mirrors.yml"
    path.write_text("""\
mirrors:
  - model: a_m_history
    topic: other
  - topics: 'pg\\.inv\\..*'
    name: '{table}_m'
    history: true
""")
    with pytest.raises(TransformError) as caught:
        expand_patterns([load_mirrors(path)], ["pg.inv.a"])
    assert "'a_m_history'" in str(caught.value)


def test_hard_deletes_speaks_dbts_vocabulary():
    assert HARD_DELETES == ("invalidate", "new_record")
