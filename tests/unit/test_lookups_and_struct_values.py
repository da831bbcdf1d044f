"""The compiler's lookups (seeds/models joined through ref()) and values written as one struct expression."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot import exp

from compiler import compile_transforms, write_outputs
from compiler.spec import TransformError
from tests.unit.generated_sql import parse_model, projection, same

LOOKUP = """\
inputs:
  - {topic: A, table: raw_a}
  - {topic: B, table: raw_b}
lookups:
  - {name: customers, ref: customer_ids}
output: {topic: C, model: c_out}
transforms:
  - type: denorm
    where: value.op IN ('c', 'r')
    left: A
    right: B
    join-on: left.value.after.id = right.value.after.a_id
    join:
      - {lookup: customers, on: customers.name = left.value.after.name}
    out: C
    key: left.key
    value: {id: left.value.after.id, customer_id: customers.id}
  - type: stateless
    where: value.op = 'u' AND customers.id IS NOT NULL
    in: B
    join:
      - lookup: customers
        on: lower(in.value.after.name) = lower(customers.name) AND customers.id = in.key.id
    out: C
    key: in.key
    value: {id: in.value.after.a_id, customer_id: customers.id}
"""

SEED = "name,id\nAlice,1\nBob,2\n"


def _project(tmp_path: Path, transform: str, seed: str | None = SEED) -> Path:
    (tmp_path / "transforms").mkdir(exist_ok=True)
    if seed is not None:
        (tmp_path / "seeds").mkdir(exist_ok=True)
        (tmp_path / "seeds" / "customer_ids.csv").write_text(seed)
    path = tmp_path / "transforms" / "t.yml"
    path.write_text(transform)
    return path


def _model(tmp_path: Path, transform: str, schemas=None, notes=None) -> str:
    path = _project(tmp_path, transform)
    files = compile_transforms([path], tmp_path, schemas=schemas, notes=notes)
    return next(f.text for f in files if f.path.name == "c_out.sql")


def _lookup_join(rule: exp.Select) -> exp.Join:
    (join,) = [j for j in rule.args["joins"] if j.alias_or_name == "lookup_customers"]
    return join


def test_a_lookup_is_read_through_ref_and_left_joined_on_its_equalities(tmp_path):
    text = _model(tmp_path, LOOKUP)
    m = parse_model(text)
    # one import CTE reads the seed through ref(), so dbt's lineage shows seed -> model
    assert text.count("{{ ref('customer_ids') }}") == 1
    assert same(m.ctes["lookup_customers"]) == same("SELECT * FROM ref__customer_ids")
    join = _lookup_join(m.ctes["rule_1"])
    assert join.side == "LEFT" and not join.kind
    assert same(join.args["on"]) == same("lookup_customers.name = left_record.value.after.name")
    matches = join.this.find(exp.Window)
    assert [same(k) for k in matches.args["partition_by"]] == [same("lookup_customers.name")]
    # either order, several equalities, expressions on both sides
    join = _lookup_join(m.ctes["rule_2"])
    assert same(join.args["on"]) == same(
        "lower(in_record.value.after.name) = lower(lookup_customers.name) AND lookup_customers.id = in_record.key.id")
    assert [same(k) for k in join.this.find(exp.Window).args["partition_by"]] == [
        same("lower(lookup_customers.name)"), same("lookup_customers.id")]
    assert projection(m.ctes["rule_2"])["value__customer_id"] == same("lookup_customers.id")
    # a record matching several lookup rows fails the run (macros/etl/checks/zync_lookup_row_is_unique.sql)
    assert same(m.ctes["rule_1"].args["where"].this) == same(
        "zync_lookup_row_is_unique('lookup_customers', 'customers', 'customer_ids', 'left_record')")


def test_a_stateless_where_may_use_the_lookup_and_its_bare_paths_mean_the_input(tmp_path):
    m = parse_model(_model(tmp_path, LOOKUP))
    assert same(m.ctes["rule_2"].args["where"].this) == same(
        "in_record.zync_replay_of IS NULL"
        " AND zync_lookup_row_is_unique('lookup_customers', 'customers', 'customer_ids', 'in_record')"
        " AND (in_record.value.op = 'u' AND NOT lookup_customers.id IS NULL)")
    # rules without lookups keep the bare paths (the denorm's where runs on each side alone)
    sides = [s.this for s in m.ctes["rule_1"].find_all(exp.Subquery) if s.alias in ("left_record", "right_record")]
    assert [same(s.args["where"].this) for s in sides] == [
        same(f"{alias}.zync_replay_of IS NULL AND value.op IN ('c', 'r')") for alias in ("left_record", "right_record")]


def test_a_join_on_key_named_on_is_read_as_a_name_not_a_yaml_boolean(tmp_path):
    # `on:` is a boolean in YAML 1.1; both flow and block style must work
    m = parse_model(_model(tmp_path, LOOKUP))
    assert _lookup_join(m.ctes["rule_1"]) and _lookup_join(m.ctes["rule_2"])


def _error(tmp_path: Path, old: str, new: str, seed: str | None = SEED) -> tuple[str, Path]:
    assert old in LOOKUP, old
    path = _project(tmp_path, LOOKUP.replace(old, new, 1), seed)
    with pytest.raises(TransformError) as error:
        write_outputs(compile_transforms([path], tmp_path), tmp_path)
    assert not (tmp_path / "models").exists(), "an error must write nothing"
    return str(error.value), path


@pytest.mark.parametrize(
    ("old", "new", "message", "line"),
    [
        ("{lookup: customers, on: customers.name", "{lookup: custmers, on: customers.name",
         "transform 1: unknown lookup 'custmers' (lookups: customers)", 14),
        ("on: customers.name = left.value.after.name", "on: customers.name > left.value.after.name",
         "a lookup join's on must be an equality", 14),
        ("on: customers.name = left.value.after.name", "on: customers.name = 'Alice'",
         "compares customers. columns with an expression over left. or right.", 14),
        ("on: customers.name = left.value.after.name", "on: customers.name = customers.id + left.key.id",
         "compares customers. columns", 14),
        ("on: customers.name = left.value.after.name", "on: customers.name = other.name",
         "does not name a record field", 14),
        ("value: {id: left.value.after.id, customer_id: customers.id}",
         "value: {id: left.value.after.id, customer_id: customers.idd}",
         "unknown column `idd` in lookup customers (seed customer_ids.csv); its columns are: name, id", 17),
        ("value: {id: left.value.after.id, customer_id: customers.id}",
         "value: {id: left.value.after.id, customer_id: customers.id.x}",
         "a seed's column `id` is a plain value", 17),
        ("where: value.op IN ('c', 'r')", "where: value.op IN ('c', 'r') AND customers.id > 0",
         "lookup 'customers' cannot be used here", 9),
        ("  - {name: customers, ref: customer_ids}", "  - {name: value, ref: customer_ids}",
         "'value' already names a record or raw column", 5),
        ("  - {name: customers, ref: customer_ids}", "  - {name: customers, ref: customer_ids}\n  - {name: customers, ref: x}",
         "'customers' is listed twice", 6),
        ("  - {name: customers, ref: customer_ids}", "  - {name: customers, ref: customer-ids}",
         "must be a plain SQL name", 5),
        ("      - {lookup: customers, on: customers.name = left.value.after.name}",
         "      - {lookup: customers, on: customers.name = left.value.after.name}\n"
         "      - {lookup: customers, on: customers.id = left.key.id}",
         "lookup 'customers' is joined twice", 15),
        ("      - {lookup: customers, on: customers.name = left.value.after.name}",
         "      - {lookup: customers, on: customers.name = left.value.after.name, how: inner}",
         "unknown setting `how`", 14),
    ],
)
def test_lookup_errors_name_file_line_and_text(tmp_path, old, new, message, line):
    text, path = _error(tmp_path, old, new)
    assert message in text
    assert f"{path}:{line}:" in text


def test_a_rule_may_not_use_a_lookup_it_does_not_join(tmp_path):
    text, path = _error(tmp_path, "value: {id: in.value.after.a_id, customer_id: customers.id}\n",
                        "value: {id: in.value.after.a_id, customer_id: customers.id}\n"
                        "  - type: stateless\n    in: A\n    out: C\n    key: in.key\n    value: {id: customers.id}\n")
    assert f"{path}:31:" in text and "`customers.id` does not name a record field: start it with in." in text


def test_a_lookup_of_a_model_or_of_nothing_known_is_noted_not_checked(tmp_path):
    notes: list[str] = []
    _project(tmp_path, "", seed=None)
    sql = _model(tmp_path, LOOKUP.replace("ref: customer_ids", "ref: c_out").replace("customers.id}", "customers.anything}"),
                 notes=notes)
    assert "ref('c_out')" in sql
    assert notes == [f"{tmp_path / 'transforms' / 't.yml'}:5: lookup customers reads model c_out: "
                     "its columns are not checked (dbt checks them when it runs)"]
    notes.clear()
    _model(tmp_path, LOOKUP.replace("ref: customer_ids", "ref: elsewhere"), notes=notes)
    assert "ref('elsewhere') is neither a seed nor a model of this project" in notes[0]


def _struct(**fields):
    return {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields.items()]}


RAW_B = _struct(
    kafka=_struct(topic="string", partition="integer", offset="long"),
    key=_struct(id="long"),
    value=_struct(op="string", after=_struct(a_id="long", name="string", note="string")),
)
STRUCT_VALUE = LOOKUP.replace("value: {id: in.value.after.a_id, customer_id: customers.id}", "value: in.value.after")


def test_a_struct_value_carries_exactly_the_structs_fields(tmp_path):
    m = parse_model(_model(tmp_path, STRUCT_VALUE, schemas={"raw_b": RAW_B}.get))
    rule_2 = projection(m.ctes["rule_2"])
    assert rule_2["value__a_id"] == same("in_record.value.after.a_id")
    assert rule_2["value__name"] == same("in_record.value.after.name")
    assert rule_2["value__note"] == same("in_record.value.after.note")
    assert rule_2["value__id"] == rule_2["value__customer_id"] == "NULL"
    # a record whose struct is null is a tombstone; otherwise it carries the struct's fields
    assert rule_2["fields"] == same("IF(in_record.value.after IS NULL, NULL, ARRAY('a_id', 'name', 'note'))")
    # the mapping rule carries its own fields only, and the union holds both
    assert projection(m.ctes["rule_1"])["fields"] == same("ARRAY('id', 'customer_id')")
    assert m.output_rows["value_fields"] == ["id", "customer_id", "a_id", "name", "note"]
    # the run checks the raw table still has the fields it was compiled with
    assert m.jinja_statements[1:] == [
        "do zync_expect_struct_fields(source('raw', 'raw_b'), ['value', 'after'], ['a_id', 'name', 'note'], "
        "'transform 2 (t.yml:18)')"]


@pytest.mark.parametrize(
    ("value", "schemas", "message"),
    [
        ("in.value.after", {}, "whose schema is not known yet (not ingested): ingest topic B first"),
        ("in.value.op", {"raw_b": RAW_B}, "`value.op` in raw_b is not a struct"),
        ("in.value.aftr", {"raw_b": RAW_B}, "unknown field `aftr` in `value`; the fields there are: op, after"),
        ("coalesce(in.value.after, in.value.after)", {"raw_b": RAW_B}, "must be a field path to a struct"),
        ("customers", {"raw_b": RAW_B}, "must be a field path to a struct"),
    ],
)
def test_a_struct_value_whose_fields_cannot_be_known_is_an_error_on_its_line(tmp_path, value, schemas, message):
    path = _project(tmp_path, STRUCT_VALUE.replace("value: in.value.after", f"value: {value}"))
    with pytest.raises(TransformError) as error:
        compile_transforms([path], tmp_path, schemas=schemas.get)
    assert message in str(error.value)
    assert f"{path}:26:" in str(error.value)


def test_value_fields_that_differ_only_in_case_are_an_error(tmp_path):
    raw_b = _struct(key=_struct(id="long"), value=_struct(op="string", after=_struct(ID="long", a_id="long", name="string")))
    path = _project(tmp_path, STRUCT_VALUE)
    with pytest.raises(TransformError) as error:
        compile_transforms([path], tmp_path, schemas={"raw_b": raw_b}.get)
    assert f"{path}:26: transform 2: value field `ID` differs from `id`" in str(error.value)
