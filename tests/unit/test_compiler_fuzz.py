"""The compiler under random input (hypothesis): whatever a transform or mirror file holds, `zync etl
compile` either writes every model or raises a TransformError naming the file and a line, and then
writes nothing. Never another exception (a stack trace for the user), never part of `models/`.

Input classes tried, each a strategy below: YAML that is not a mapping or not YAML at all; a valid
transform with one node replaced (by a scalar, a list, a mapping, an SQL fragment), removed, or
joined by an unknown key; a valid mirror file mutated the same ways; random SQL fragments in every
expression slot of a valid transform.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import compile_transforms, write_outputs
from compiler.spec import TransformError
from tests.unit.test_compiler import GOOD

MIRROR = """\
mirrors:
  - model: m_items
    topic: Items
    table: raw_items
    delete: soft
    primary-key: {item_id: key.ID}
    columns: {name: value.after.name, upper_name: upper(value.after.name)}
    source-ts: value.source.ts_ms
"""
FUZZ = settings(max_examples=int(os.environ.get("ZYNC_FUZZ_EXAMPLES", "150")), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# SQL a user might type, well or badly: names, operators, strings with ; and quotes, queries, jinja.
SQL_FRAGMENTS = st.sampled_from([
    "left.key", "in.value.after.id", "value.after.note = 'a;b'", "right.value.after.a_id", "1 +", "(", "')",
    "select 1", "(select 1)", "x; drop table t", "left.value.after.id > right.value.after.a_id", "{{ ref('x') }}",
    "value.op IN ('c', 'u')", "upper(value.after.name)", "`weird name`.x", "null", "current_timestamp()",
    "in.value.after.a_id = right.value.after.a_id AND left.key.id = 2", "-- comment", "'unterminated",
    "in.key.id", "key.ID", "cast(value.after.id as bigint)", "*", "in.*", "left.value.after",
])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=30), SQL_FRAGMENTS)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=10), inner, max_size=3)),
                      max_leaves=8)


def paths_in(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a node of a parsed YAML document (keys and list indexes)."""
    found = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            found += paths_in(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += paths_in(v, prefix + (i,))
    return found


def mutated(document: str, data) -> str:
    """The document with one node replaced, removed or joined by an unknown key, as YAML text."""
    tree = yaml.safe_load(document)
    path = data.draw(st.sampled_from(paths_in(tree)[1:]), label="path")
    parent = tree
    for step in path[:-1]:
        parent = parent[step]
    action = data.draw(st.sampled_from(["replace", "sql", "remove", "add"]), label="action")
    if action == "replace":
        parent[path[-1]] = data.draw(VALUES, label="value")
    elif action == "sql":
        parent[path[-1]] = data.draw(SQL_FRAGMENTS, label="sql")
    elif action == "remove":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[data.draw(st.text(min_size=1, max_size=12), label="key")] = data.draw(VALUES, label="value")
    else:
        parent.append(data.draw(VALUES, label="value"))
    return yaml.safe_dump(tree, sort_keys=False)


def compiles_or_says_where(text: str, name: str = "t.yml") -> None:
    """The property: all models, or a TransformError at file:line and nothing written."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = root / name
        path.write_text(text)
        try:
            files = compile_transforms([path], root)
        except TransformError as e:
            assert str(e).startswith(f"{path}:"), str(e)
            assert e.where.path == path and e.where.line >= 1, str(e)
            assert not (root / "models").exists()
            return
        written = write_outputs(files, root)
        assert written and all((root / p).exists() for p in written)


@FUZZ
@given(st.text(max_size=200))
def test_any_text(text):
    compiles_or_says_where(text)


@FUZZ
@given(st.data())
def test_a_transform_with_one_node_changed(data):
    compiles_or_says_where(mutated(GOOD, data))


@FUZZ
@given(st.data())
def test_a_mirror_file_with_one_node_changed(data):
    compiles_or_says_where(mutated(MIRROR, data), "mirrors.yml")


@FUZZ
@given(st.lists(SQL_FRAGMENTS, min_size=4, max_size=4))
def test_sql_fragments_in_every_expression_slot(fragments):
    where, join_on, key, value = (yaml.safe_dump(f).splitlines()[0] for f in fragments)  # each a YAML scalar
    text = (GOOD.replace("where: value.op IN ('c', 'r')", f"where: {where}")
            .replace("join-on: left.value.after.id = right.value.after.a_id", f"join-on: {join_on}")
            .replace("key: left.key", f"key: {key}")
            .replace("b: right.value.after.b", f"b: {value}"))
    compiles_or_says_where(text)
