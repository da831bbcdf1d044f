"""The transform YAML -> dbt model compiler: pure logic, no services."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlglot import exp

from compiler import compile_transforms, transform_files, write_outputs
from compiler.spec import TransformError
from tests.unit.generated_sql import Model, parse_model, projection, same

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
inputs:
  - {topic: A, table: raw_a}
  - {topic: B, table: raw_b}
output: {topic: C, model: c_out}
transforms:
  - type: denorm
    where: value.op IN ('c', 'r')
    left: A
    right: B
    join-on: left.value.after.id = right.value.after.a_id
    out: C
    key: left.key
    value: {id: left.value.after.id, b: right.value.after.b}
  - type: stateless
    where: value.op = 'u'
    in: B
    out: C
    key: {id: in.value.after.a_id}
    value: {id: in.value.after.a_id, b: in.value.after.b}
"""


def write(tmp_path: Path, text: str, name: str = "t.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def model_sql(tmp_path: Path, text: str) -> str:
    files = compile_transforms([write(tmp_path, text)], tmp_path)
    return next(f.text for f in files if f.path.suffix == ".sql")


def test_committed_models_are_what_the_compiler_writes_now():
    files = compile_transforms(transform_files(ROOT), ROOT)
    assert files, "no transforms compiled"
    for f in files:
        committed = ROOT / f.path
        assert committed.exists(), f"{f.path} is not committed: run `zync etl compile`"
        assert committed.read_text() == f.text, f"{f.path} is stale: run `zync etl compile` and commit"


def model(tmp_path: Path, text: str) -> Model:
    return parse_model(model_sql(tmp_path, text))


def test_the_demo_model_reads_as_sql(tmp_path):
    # one CTE per input (import), per rule, the events, what each input's rules could take, then the machinery
    demo = parse_model((ROOT / "models" / "outputs" / "demo" / "new_invoices.sql").read_text())
    assert list(demo.ctes) == ["invoices", "invoice_status", "rule_1", "rule_2", "rule_3", "rule_4", "events",
                               "invoices_takeable", "invoice_status_takeable", "zync_output_rows"]
    # the final select shows the output row, its value built from the rules' value__ columns
    assert same(demo.final) == same(
        "SELECT kafka, kind, key, CASE WHEN fields IS NOT NULL THEN named_struct('ID', value__ID, 'customer', "
        "value__customer, 'item', value__item, 'invoice_status', value__invoice_status) END AS value, fields, "
        "status, run_id FROM zync_output_rows")


def test_record_names_become_safe_quoted_aliases(tmp_path):
    m = model(tmp_path, GOOD)
    join = m.ctes["rule_1"].args["joins"][0]
    assert same(join.args["on"]) == same(
        "left_record.value.after.id = right_record.value.after.a_id AND left_record.zync_pair = right_record.zync_pair")
    assert projection(m.ctes["rule_2"])["key"] == same("named_struct('id', in_record.value.after.a_id)")
    roots = {c.parts[0].name for cte in m.ctes.values() for c in cte.find_all(exp.Column) if len(c.parts) > 1}
    assert not roots & {"left", "right", "in"}
    assert "`in_record`.`value`.`after`.`a_id`" in m.ctes["rule_2"].sql(dialect="spark", identify=True)


def test_a_rule_reads_as_a_select_with_its_where(tmp_path):
    rule_2 = model(tmp_path, GOOD).ctes["rule_2"]
    assert rule_2.args["from_"].this.name == "b" and rule_2.args["from_"].this.alias == "in_record"
    assert same(rule_2.args["where"].this) == same("in_record.zync_replay_of IS NULL AND value.op = 'u'")
    assert projection(rule_2) == {
        "consumed": same("array(zync_coordinates('in_record'))"), "ordering": same("zync_ordering('in_record')"),
        "key": same("named_struct('id', in_record.value.after.a_id)"),
        "value__id": same("in_record.value.after.a_id"), "value__b": same("in_record.value.after.b"),
        "fields": same("array('id', 'b')"),
    }


def test_partial_rows_carry_their_field_list_and_nulls_for_the_rest(tmp_path):
    text = GOOD.replace("value: {id: in.value.after.a_id, b: in.value.after.b}", "value: {id: in.value.after.a_id}")
    m = model(tmp_path, text)
    assert projection(m.ctes["rule_2"])["value__b"] == "NULL"
    assert projection(m.ctes["rule_2"])["fields"] == same("ARRAY('id')")
    assert m.output_rows["value_fields"] == ["id", "b"]


def test_a_later_rule_excludes_records_taken_by_an_earlier_rule_on_the_same_input(tmp_path):
    rule_2 = model(tmp_path, GOOD).ctes["rule_2"]
    (anti,) = rule_2.args["joins"]
    assert anti.side == "LEFT" and anti.kind == "ANTI"
    assert [t.name for t in anti.this.find_all(exp.Table)] == ["rule_1"]
    assert same(anti.args["on"]) == same(
        "in_record.kafka.topic = consumed_before.record.topic AND in_record.kafka.partition = "
        "consumed_before.record.partition AND in_record.kafka.offset = consumed_before.record.offset")


def test_tombstone_rule(tmp_path):
    text = GOOD.replace("value: {id: in.value.after.a_id, b: in.value.after.b}", "value: null")
    assert projection(model(tmp_path, text).ctes["rule_2"])["fields"] == same("cast(null as array<string>)")


def test_join_on_may_be_written_right_to_left_and_as_a_conjunction(tmp_path):
    text = GOOD.replace(
        "join-on: left.value.after.id = right.value.after.a_id",
        "join-on: right.value.after.a_id = left.value.after.id AND left.key.id = right.value.after.x",
    )
    rule_1 = model(tmp_path, text).ctes["rule_1"]
    # each side is numbered within its join key: the n-th left pairs with the n-th right
    sides = {s.alias: s.this for s in rule_1.find_all(exp.Subquery) if s.alias in ("left_record", "right_record")}
    pairs = {alias: [same(k) for k in side.find(exp.Window).args["partition_by"]] for alias, side in sides.items()}
    assert pairs == {"left_record": [same("left_record.value.after.id"), same("left_record.key.id")],
                     "right_record": [same("right_record.value.after.a_id"), same("right_record.value.after.x")]}
    assert same(rule_1.args["joins"][0].args["on"]) == same(
        "right_record.value.after.a_id = left_record.value.after.id AND left_record.key.id = right_record.value.after.x"
        " AND left_record.zync_pair = right_record.zync_pair")


@pytest.mark.parametrize(
    ("change", "message", "line"),
    [
        (("join-on: left.value.after.id = right.value.after.a_id", "join-on: left.value.after.id > right.value.after.a_id"),
         "join-on must be an equality", 10),
        (("join-on: left.value.after.id = right.value.after.a_id", "join-on: left.value.after.id = 1"),
         "join-on", 10),
        (("key: left.key", "key: left.key; drop table x"), "not statements", 12),
        (("key: left.key", "key: (select 1)"), "not a query", 12),
        (("key: left.key", "key: other.key"), "does not name a record field", 12),
        (("key: left.key", "key: left.key +"), "not a valid SQL expression", 12),
        (("right: B", "right: Z"), "not among the inputs", 9),
        (("type: stateless", "type: statefull"), "type must be denorm or stateless", 14),
        (("value: {id: left.value.after.id, b: right.value.after.b}", "value: left.value.after"), "whose schema is not known yet", 13),
        (("    out: C\n    key: {id", "    out: D\n    key: {id"), "not the output topic", 17),
        (("  - {topic: B, table: raw_b}", "  - {topic: B, table: raw-b}"), "plain SQL name", 3),
        (("    where: value.op = 'u'", "    where: in.value.op = 'u' AND other.x = 1"), "does not name a record field", 15),
    ],
)
def test_errors_name_file_line_and_text(tmp_path, change, message, line):
    old, new = change
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(TransformError) as error:
        compile_transforms([path], tmp_path)
    text = str(error.value)
    assert message in text
    assert f"{path}:{line}:" in text


def test_invalid_yaml_is_reported_with_its_line(tmp_path):
    path = write(tmp_path, GOOD.replace("output: {topic: C, model: c_out}", "output: {topic: C, model: c_out"))
    with pytest.raises(TransformError, match=r"t\.yml:\d+: not valid YAML"):
        compile_transforms([path], tmp_path)


def test_an_error_in_any_file_writes_nothing(tmp_path):
    good = write(tmp_path, GOOD, "good.yml")
    bad = write(tmp_path, GOOD.replace("topic: C, model: c_out", "topic: D, model: d_out").replace("right: B", "right: Z"), "bad.yml")
    with pytest.raises(TransformError):
        write_outputs(compile_transforms([good, bad], tmp_path), tmp_path)
    assert not (tmp_path / "models").exists()


def test_two_files_may_not_write_the_same_output(tmp_path):
    a, b = write(tmp_path, GOOD, "a.yml"), write(tmp_path, GOOD, "b.yml")
    with pytest.raises(TransformError, match="also written by"):
        compile_transforms([a, b], tmp_path)


def test_sources_list_every_input_table_with_its_topic(tmp_path):
    files = compile_transforms([write(tmp_path, GOOD)], tmp_path)
    sources = next(f.text for f in files if f.path.name == "__sources.yml")
    assert "name: raw_a" in sources and "zync_topic: A" in sources
    assert "name: raw_b" in sources and "zync_topic: B" in sources


def test_expire_after_takes_offsets_or_a_duration(tmp_path):
    text = GOOD.replace("  - {topic: A, table: raw_a}", "  - {topic: A, table: raw_a, expire-after: 1000}")
    text = text.replace("  - {topic: B, table: raw_b}", "  - {topic: B, table: raw_b, expire-after: 30m}")
    assert model(tmp_path, text).output_rows["inputs"] == [
        {"cte": "a_takeable", "expire_after": {"offsets": 1000}},
        {"cte": "b_takeable", "expire_after": {"seconds": 1800.0}},
    ]


def test_each_input_says_which_records_a_rule_could_take(tmp_path):
    m = model(tmp_path, GOOD)
    takeable = [projection(m.ctes[name])["zync_takeable"] for name in ("a_takeable", "b_takeable")]
    # A: only the denorm's left side (its where, and a join key to pair on); B: the denorm's right
    # side or the stateless rule. Anything else (a tombstone, a delete) no rule can take: skipped.
    expected = [
        "coalesce(value.op in ('c', 'r') and in_record.value.after.id is not null, false)",
        "coalesce((value.op in ('c', 'r') and in_record.value.after.a_id is not null) or value.op = 'u', false)",
    ]
    assert takeable == [same(e) for e in expected]


@pytest.mark.parametrize("bad", ["-5", "0", "soon", "10 parsecs", "true"])
def test_a_bad_expire_after_is_an_error_on_its_line(tmp_path, bad):
    path = write(tmp_path, GOOD.replace("  - {topic: A, table: raw_a}", f"  - {{topic: A, table: raw_a, expire-after: {bad}}}"))
    with pytest.raises(TransformError, match=r"t\.yml:2: expire-after must be"):
        compile_transforms([path], tmp_path)


def test_an_output_topic_may_not_be_one_of_its_inputs(tmp_path):
    path = write(tmp_path, GOOD.replace("output: {topic: C, model: c_out}", "output: {topic: A, model: c_out}"))
    with pytest.raises(TransformError, match=r"t\.yml:4: .*also an input"):
        compile_transforms([path], tmp_path)


def test_each_output_gets_a_pending_report_model(tmp_path):
    files = compile_transforms([write(tmp_path, GOOD)], tmp_path)
    report = next(f.text for f in files if f.path.name == "c_out__pending.sql")
    assert "zync_pending_report(" in report and "ref('c_out')" in report
    assert "{'topic': 'A', 'relation': source('raw', 'raw_a')}" in report


def _struct(**fields):
    return {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields.items()]}


RAW_A_SCHEMA = _struct(
    kafka=_struct(topic="string", partition="integer", offset="long"),
    key=_struct(id="long"),
    value=_struct(op="string", after=_struct(id="long", name="string")),
)


def _delta_table(warehouse: Path, table: str, schema: dict) -> None:
    import json

    log = warehouse / "zync.db" / table / "_delta_log"
    log.mkdir(parents=True)
    metadata = {"id": "test", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                "partitionColumns": [], "configuration": {}, "createdTime": 0}
    (log / "00000000000000000000.json").write_text(
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}) + "\n" + json.dumps({"metaData": metadata}) + "\n"
    )


def test_field_paths_are_checked_against_the_raw_tables_delta_schema(tmp_path):
    from compiler.schemas import delta_table_schemas

    _delta_table(tmp_path / "wh", "raw_a", RAW_A_SCHEMA)
    text = GOOD.replace("key: left.key", "key: left.value.after.nmae")
    path = write(tmp_path, text)
    notes: list[str] = []
    with pytest.raises(TransformError) as error:
        compile_transforms([path], tmp_path, schemas=delta_table_schemas(tmp_path / "wh", "zync"), notes=notes)
    message = str(error.value)
    assert f"{path}:12:" in message
    assert "unknown field `nmae` in `value.after`; the fields there are: id, name" in message
    assert "left.value.after.nmae" in message


def test_known_fields_pass_and_an_input_without_a_schema_is_noted(tmp_path):
    from compiler.schemas import delta_table_schemas

    _delta_table(tmp_path / "wh", "raw_a", RAW_A_SCHEMA)
    notes: list[str] = []
    files = compile_transforms([write(tmp_path, GOOD)], tmp_path, schemas=delta_table_schemas(tmp_path / "wh", "zync"), notes=notes)
    assert files
    assert notes == [f"{tmp_path / 't.yml'}: no schema for raw_b yet (not ingested): expressions over it are not checked"]


def test_a_schema_kept_only_in_a_checkpoint_is_read(tmp_path):
    """After log clean-up the table's schema lives in a checkpoint, not in any JSON commit; the
    evolved schema (a column added by the second write) is the one read."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from compiler.schemas import delta_table_schemas

    location = tmp_path / "wh" / "zync.db" / "raw_a"
    after = pa.struct([("id", pa.int64())])
    write_deltalake(str(location), pa.table({"value": pa.array([{"id": 1}], pa.struct([("after", after)]))}))
    grown = pa.struct([("after", after), ("op", pa.string())])
    write_deltalake(str(location), pa.table({"value": pa.array([{"after": {"id": 2}, "op": "c"}], grown)}),
                    mode="append", schema_mode="merge")
    DeltaTable(str(location)).create_checkpoint()
    for commit in (location / "_delta_log").glob("*.json"):
        commit.unlink()

    schema = delta_table_schemas(tmp_path / "wh", "zync")("raw_a")
    assert schema is not None
    value = next(field for field in schema["fields"] if field["name"] == "value")
    assert [field["name"] for field in value["type"]["fields"]] == ["after", "op"]
    assert delta_table_schemas(tmp_path / "wh", "zync")("raw_never_written") is None


def test_a_where_over_both_denorm_inputs_is_checked_on_each(tmp_path):
    schemas = {"raw_a": RAW_A_SCHEMA, "raw_b": _struct(kafka=_struct(offset="long"), key=_struct(id="long"), value=_struct(after=_struct(a_id="long", b="string")))}
    path = write(tmp_path, GOOD)
    with pytest.raises(TransformError, match=r"t\.yml:7: unknown field `op` in `value`; the fields there are: after \(input B, table raw_b\)"):
        compile_transforms([path], tmp_path, schemas=schemas.get)


def test_each_input_types_only_the_fields_its_rules_read(tmp_path):
    """zync_pending is told which field paths the rules read (the key always): the others stay as written,
    so an unread column costs the plan nothing and a value of it no Spark type holds stops nothing."""
    text = GOOD.replace("value: {id: left.value.after.id, b: right.value.after.b}",
                        "value: {id: left.value.after.id, b: right.value.after.b, all_of_b: right.value.after}")
    sql = model_sql(tmp_path, text)
    assert ("zync_pending(source('raw', 'raw_a'), 'A', zync,\n"
            "        reads=['key', 'value.op', 'value.after.id'])") in sql
    # value.after read whole on B: the paths below it are left out (it is typed whole)
    assert "reads=['key', 'value.after', 'value.op'])" in sql
    plain = model_sql(tmp_path, GOOD)
    assert "reads=['key', 'value.op', 'value.after.a_id', 'value.after.b'])" in plain


WHOLE = GOOD.replace("  - {topic: A, table: raw_a}\n  - {topic: B, table: raw_b}\n",
                     "  - {topic: pg.public.a, table: raw_pg_public_a, pool: raw_pg, consistency: transaction}\n"
                     "  - {topic: pg.public.b, table: raw_pg_public_b, pool: raw_pg, consistency: transaction}\n"
                     ).replace(": A\n", ": pg.public.a\n").replace(": B\n", ": pg.public.b\n")


def test_an_output_over_inputs_at_the_cut_numbers_its_rows_by_source_transaction(tmp_path):
    files = compile_transforms([write(tmp_path, WHOLE)], tmp_path)
    text = next(f.text for f in files if f.path.name == "c_out.sql")
    model = parse_model(text)
    # Each event's order starts with its source transaction: the newest of its records' (a denorm's two).
    assert "zync_ordering('left_record', transactions=['left_record', 'right_record'])" in text
    assert "zync_ordering('in_record', transactions=['in_record'])" in text
    assert model.output_rows["transactions"] == "pg.transaction"
    assert [c.alias_or_name for c in model.final.expressions][-1] == "transaction"
    # Every input reads the fields its records' transaction is told by, and looks its END up in the connector's
    # transaction topic (its place in commit order).
    assert text.count("'value.transaction.id', 'value.transaction.total_order'") == 2
    assert text.count("transactions={'ends': source('raw', 'raw_pg_transaction'), 'topic': 'pg.transaction'}") == 2
    sources = next(f.text for f in files if f.path.name == "__sources.yml")
    assert "zync_pool: raw_pg" in sources and "zync_transactions: pg.transaction" in sources
    # An output over inputs read as they come is compiled as before.
    plain = model_sql(tmp_path, GOOD)
    assert "transactions" not in plain and "value.transaction" not in plain


@pytest.mark.parametrize("change, message", [
    ("consistency: transaction}\n  - {topic: pg.public.b, table: raw_pg_public_b, pool: raw_pg, consistency: "
     "transaction}", "every input must then read at its connector's cut"),
    ("pool: raw_pg, consistency: transaction}\n  - {topic: pg.public.b, table: raw_pg_public_b, consistency: "
     "transaction}", "`consistency: transaction` needs `pool:`"),
    ("pool: raw_pg, consistency: transaction, errors.tolerance: all}\n  - {topic: pg.public.b, table: "
     "raw_pg_public_b, pool: raw_pg, consistency: transaction}", "leave errors.tolerance out of a pooled input"),
    ("pool: raw_pg, consistency: transaction}\n  - {topic: pg.public.b, table: raw_pg_public_b, pool: raw_pg, "
     "consistency: transaction, transactions: other.transaction}", "two connectors' orders do not compare"),
])
def test_inputs_at_the_cut_refuse_a_bad_combination(tmp_path, change, message):
    text = WHOLE.replace("pool: raw_pg, consistency: transaction}\n  - {topic: pg.public.b, table: raw_pg_public_b, "
                         "pool: raw_pg, consistency: transaction}", change)
    if message.startswith("every"):  # input a read as it comes, b at the cut
        text = WHOLE.replace("{topic: pg.public.a, table: raw_pg_public_a, pool: raw_pg, consistency: transaction}",
                             "{topic: pg.public.a, table: raw_pg_public_a}")
    with pytest.raises(TransformError, match=message):
        compile_transforms([write(tmp_path, text)], tmp_path)


def test_a_topic_read_at_the_cut_and_as_it_comes_is_refused(tmp_path):
    mirror = write(tmp_path, "mirrors:\n  - {model: a_mirror, topic: pg.public.a, pool: raw_pg}\n", "m.yml")
    with pytest.raises(TransformError, match="read at the cut of pg.transaction in one place and as it comes"):
        compile_transforms([write(tmp_path, WHOLE), mirror], tmp_path)
