"""Turn checked transforms into dbt files: one model and properties file per output, one sources file.

Every file is rendered in memory first; files are written only when all of
them rendered, so an error leaves the project as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from sqlglot import exp

from compiler import expressions as sql
from compiler import mirrors, model
from compiler.model import StructFields
from compiler.lookups import check_lookups
from compiler.properties import GENERATED, SOURCE_NAME, render_properties, render_sources
from compiler.schemas import SchemaSource, field_path_error, struct_field_names
from compiler.spec import IDENTIFIER_PATTERN, Rule, Shape, Text, Transform, TransformError, load_transform
from zync.ingest_options import SOURCES_FILE
from zync.tables import pending_report_name

MODELS_FOLDER = Path("models") / "outputs"


@dataclass(frozen=True)
class GeneratedFile:
    path: Path  # relative to the project root
    text: str


DEMO_FOLDER = "demo"


def transform_files(project_root: Path) -> list[Path]:
    """The project's transform and mirror files: transforms/*.yml, then each demo's demo/<name>/transforms/*.yml."""
    found = sorted((project_root / "transforms").glob("*.y*ml"))
    return found + sorted((project_root / DEMO_FOLDER).glob("*/transforms/*.y*ml"))


def generated_subfolder(source: Path) -> Path:
    """Where, below models/outputs or models/mirrors, the models of a transform file go.

    A demo's transforms (demo/<name>/transforms/) compile into a `demo`
    subfolder, which dbt_project.yml disables unless ZYNC_DEMO=true: a
    user's `dbt run` must not build models over raw tables it never ingests.
    """
    return Path(DEMO_FOLDER) if source.parts[:1] == (DEMO_FOLDER,) else Path()


def _records(rule: Rule) -> tuple[str, ...]:
    return ("left", "right") if rule.kind == "denorm" else ("in",)


def struct_value_fields(transform: Transform, schemas: SchemaSource | None) -> StructFields:
    """The fields of every value written as one expression: those of the struct it names in its input's schema.

    The row's `fields` must be the struct's fields, so the compiler has to know
    them: the expression must be a field path (`in.value.after`) into a raw
    table whose schema is known (ingested), and it must name a struct.
    """
    tables = {i.topic: i.table for i in transform.inputs}
    found: StructFields = {}
    for rule in transform.rules:
        text = rule.value
        if not isinstance(text, Text):
            continue
        path = sql.field_path(sql.parse(text))
        records = dict(zip(_records(rule), rule.inputs))
        if path is None or path[0] not in records or len(path) < 2:
            raise TransformError(
                text.where, "value as one expression must be a field path to a struct of the input, e.g. "
                f"{_records(rule)[0]}.value.after (its fields become the row's fields); otherwise write a mapping "
                "of field: expression", text.sql)
        table = tables[records[path[0]]]
        schema = schemas(table) if schemas is not None else None
        if schema is None:
            raise TransformError(
                text.where, f"value is one expression, so the row's fields are the fields of `{'.'.join(path[1:])}` "
                f"in {table}, whose schema is not known yet (not ingested): ingest topic {records[path[0]]} first "
                "and compile again, or write the value as a mapping of field: expression", text.sql)
        problem = field_path_error(schema, path[1:])
        if problem:
            raise TransformError(text.where, f"{problem} (input {records[path[0]]}, table {table})", text.sql)
        names = struct_field_names(schema, path[1:])
        if names is None:
            raise TransformError(text.where, f"value: `{'.'.join(path[1:])}` in {table} is not a struct, so it has "
                                 "no fields to carry; write a mapping, e.g. {name: ...}", text.sql)
        bad = [n for n in names if not IDENTIFIER_PATTERN.match(n)]
        if bad or not names:
            raise TransformError(text.where, f"value: the struct's fields {bad or names} are not plain names; "
                                 "write a mapping", text.sql)
        found[rule.index] = names
    return found


def _fields_of(rule: Rule, struct_fields: StructFields) -> list[str] | None:
    """The top-level value fields a rule writes (None for a tombstone rule)."""
    if isinstance(rule.value, Text):
        return struct_fields[rule.index]
    return None if rule.value is None else list(rule.value)


def _value_fields(rules: tuple[Rule, ...], struct_fields: StructFields) -> list[str]:
    """Every top-level value field any rule writes, in first-seen order."""
    fields: list[str] = []
    for rule in rules:
        for name in _fields_of(rule, struct_fields) or []:
            same = next((f for f in fields if f.lower() == name.lower()), None)
            if same is None:
                fields.append(name)
            elif same != name:
                where = rule.value.where if isinstance(rule.value, Text) else rule.where
                raise TransformError(where, f"transform {rule.index}: value field `{name}` differs from `{same}`, "
                                     "written by an earlier transform, only in case; Spark takes them for one "
                                     "column: spell them alike")
    return fields


@dataclass(frozen=True)
class CheckedTransform:
    """A transform whose every expression is parsed and checked: what its model is rendered from."""

    transform: Transform
    rules: list[model.CompiledRule]
    struct_fields: StructFields
    value_fields: list[str]


def check_transform(transform: Transform, struct_fields: StructFields) -> CheckedTransform:
    """Build every rule's trees (refusing a bad expression with its file and line) and the output's value fields."""
    rules = [model.compile_rule(rule) for rule in transform.rules]
    return CheckedTransform(transform, rules, struct_fields, _value_fields(transform.rules, struct_fields))


def render_model(checked: CheckedTransform, project_root: Path) -> str:
    """The output model: config, then the import CTEs, a CTE per rule and the final select (compiler/model.py)."""
    transform = checked.transform
    source = transform.path.resolve().relative_to(project_root.resolve()) if transform.path.resolve().is_relative_to(project_root.resolve()) else transform.path
    meta = {
        "zync_output_topic": transform.output_topic,
        "zync_inputs": [{"topic": i.topic, "table": i.table} for i in transform.inputs],
    }
    return "\n".join([
        f"{{#- {GENERATED.format(source=source)} #}}",
        "{{ config(\n"
        "    materialized='zync_output',\n"
        "    file_format='delta',\n"
        "    partition_by=['kind'],\n"
        f"    meta={meta!r},\n"
        ") }}",
        f"{{%- set zync = zync_state({transform.output_topic!r}) %}}",
        "",
        model.render_model_body(transform, checked.rules, checked.value_fields, checked.struct_fields),
    ])


def render_pending_report(transform: Transform, project_root: Path) -> str:
    """A view of what waits for this output and why, and of what expired (zync's pending.zed)."""
    source = transform.path.resolve().relative_to(project_root.resolve()) if transform.path.resolve().is_relative_to(project_root.resolve()) else transform.path
    inputs = ",\n".join(
        f"        {{'topic': {i.topic!r}, 'relation': source({SOURCE_NAME!r}, {i.table!r})}}" for i in transform.inputs
    )
    return "\n".join([
        f"{{#- {GENERATED.format(source=source)} #}}",
        "{{ config(materialized='view') }}",
        "",
        "{{ zync_pending_report(\n"
        f"    ref({transform.model!r}),\n"
        f"    inputs=[\n{inputs}\n    ],\n"
        ") }}",
        "",
    ])


def _texts(shape: Shape) -> list[Text]:
    if isinstance(shape, Text):
        return [shape]
    return [t for sub in (shape or {}).values() for t in _texts(sub)]


def check_fields(transform: Transform, schemas: SchemaSource) -> list[str]:
    """Check every field path against its input's schema; return notes on inputs without one yet."""
    tables = {i.topic: i.table for i in transform.inputs}
    known = {table: schemas(table) for table in tables.values()}
    notes = [
        f"{transform.path}: no schema for {table} yet (not ingested): expressions over it are not checked"
        for table, schema in known.items() if schema is None
    ]
    for rule in transform.rules:
        records = dict(zip(("left", "right"), rule.inputs)) if rule.kind == "denorm" else {"in": rule.inputs[0]}
        texts = _texts(rule.key) + _texts(rule.value) + [t for t in (rule.join_on, rule.condition) if t is not None]
        texts += [join.on for join in rule.joins]
        for text in texts:
            for column in sql.parse(text).find_all(exp.Column):
                parts = sql.column_path(column)
                if parts[0] in records:
                    targets, path = [records[parts[0]]], parts[1:]
                elif parts[0] in sql.RAW_COLUMNS:  # a `where` over the rule's own inputs
                    targets, path = list(rule.inputs), parts
                else:
                    continue  # refused with its own message when rendered
                for topic in targets:
                    schema = known[tables[topic]]
                    problem = field_path_error(schema, path) if schema is not None else None
                    if problem:
                        raise TransformError(text.where, f"{problem} (input {topic}, table {tables[topic]})", text.sql)
    return notes


def compile_transforms(paths: list[Path], project_root: Path, schemas: SchemaSource | None = None,
                       notes: list[str] | None = None,
                       topics: Callable[[], Iterable[str]] | None = None) -> list[GeneratedFile]:
    """Check every transform file and render every generated file; raise on the first error.

    schemas: table -> its schema (or None when not known yet); field paths are
    checked against it. notes collects what could not be checked. topics: the
    broker's topic names, asked only when a mirror entry names `topics:`.
    """
    # Mirror files (top level `mirrors:`) compile in compiler/mirrors.py; their raw tables join the sources.
    mirror_files = [mirrors.load_mirrors(p) for p in paths if mirrors.is_mirror_file(p)]
    patterns = [p for f in mirror_files for p in f.patterns]
    if patterns:
        if topics is None:
            raise TransformError(patterns[0].where, "a mirror entry with `topics:` needs the broker's topic list, "
                                 "which this compile was not given")
        mirror_files = mirrors.expand_project_patterns(mirror_files, topics(), project_root)
    transforms = [load_transform(p) for p in paths if p not in {m.path for m in mirror_files}]
    generated_models = {t.model for t in transforms} | {name for f in mirror_files for m in f.mirrors for name in m.models}
    checked: dict[Path, CheckedTransform] = {}
    for t in transforms:
        found = check_fields(t, schemas) if schemas is not None else []
        found += check_lookups(t, project_root, generated_models)
        checked[t.path] = check_transform(t, struct_value_fields(t, schemas))
        if notes is not None:
            notes.extend(found)
    seen: dict[str, Path] = {}
    for t in transforms:
        for key in (f"topic {t.output_topic}", f"model {t.model}"):
            if key in seen:
                raise TransformError(t.rules[0].where, f"output {key} is also written by {seen[key]}")
            seen[key] = t.path
    root = project_root.resolve()

    def relative(p: Path) -> Path:
        p = p.resolve()
        return p.relative_to(root) if p.is_relative_to(root) else p

    files = []
    for t in transforms:
        folder = MODELS_FOLDER / generated_subfolder(relative(t.path))
        files.append(GeneratedFile(folder / f"{t.model}.sql", render_model(checked[t.path], project_root)))
        files.append(GeneratedFile(folder / f"{t.model}.yml", render_properties(t, relative(t.path))))
        files.append(GeneratedFile(folder / f"{pending_report_name(t.model)}.sql", render_pending_report(t, project_root)))
    files += [GeneratedFile(path, text)
              for path, text in mirrors.compile_mirrors(mirror_files, relative, generated_subfolder)]
    files.append(GeneratedFile(SOURCES_FILE, render_sources([*transforms, *mirror_files], [relative(p) for p in paths])))
    return files


def write_outputs(files: list[GeneratedFile], project_root: Path) -> list[Path]:
    written = []
    for f in files:
        target = project_root / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text() != f.text:
            tmp = target.with_suffix(target.suffix + ".tmp")
            tmp.write_text(f.text)
            tmp.replace(target)
            written.append(f.path)
    return written
