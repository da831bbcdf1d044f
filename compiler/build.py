"""Turn checked transforms into dbt files: one model and properties file per output, one sources file.

Every file is rendered in memory first; files are written only when all of
them rendered, so an error leaves the project as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlglot import exp

from compiler import expressions as sql
from compiler import mirrors
from compiler.properties import GENERATED, SOURCE_NAME, render_properties, render_sources, snake
from compiler.schemas import SchemaSource, field_path_error
from compiler.spec import Rule, Shape, Text, Transform, TransformError, load_transform

MODELS_FOLDER = Path("models") / "outputs"
SOURCES_FILE = Path("models") / "raw" / "__sources.yml"


@dataclass(frozen=True)
class GeneratedFile:
    path: Path  # relative to the project root
    text: str


def input_cte(topic: str) -> str:
    return snake(topic) or "input"


def _shape_expression(shape: Shape, allowed: tuple[str, ...]) -> exp.Expression:
    if isinstance(shape, Text):
        return sql.expression(shape, allowed)
    assert isinstance(shape, dict)
    return sql.named_struct({name: _shape_expression(sub, allowed) for name, sub in shape.items()})


def _value_fields(rules: tuple[Rule, ...]) -> list[str]:
    """Every top-level value field any rule writes, in first-seen order."""
    fields: list[str] = []
    for rule in rules:
        if isinstance(rule.value, Text):
            raise TransformError(
                rule.value.where,
                "value must be a mapping of field: expression (or null for a tombstone), so that a "
                "partial row carries exactly its fields; list the fields, e.g. {ID: in.value.after.ID}",
                rule.value.sql,
            )
        for name in rule.value or {}:
            if name not in fields:
                fields.append(name)
    return fields


def _projection(rule: Rule, value_fields: list[str]) -> str:
    aliases = ("left", "right") if rule.kind == "denorm" else ("in",)
    lines = [f"{sql.render(_shape_expression(rule.key, aliases))} as `key`"] if rule.key is not None else ["null as `key`"]
    for name in value_fields:
        shape = rule.value.get(name) if isinstance(rule.value, dict) else None
        rendered = sql.render(_shape_expression(shape, aliases)) if shape is not None else "null"
        lines.append(f"{rendered} as `value__{name}`")
    if rule.value is None:
        lines.append("cast(null as array<string>) as `fields`")
    else:
        lines.append(f"{sql.string_list(list(rule.value))} as `fields`")
    return ",\n        ".join(lines)


def _jinja_string(text: str) -> str:
    """A Python/Jinja string literal for SQL text passed to a macro."""
    return repr(text)


def _rule_cte(rule: Rule, transform: Transform, earlier: list[Rule], value_fields: list[str]) -> str:
    after = [f"rule_{r.index}" for r in earlier if set(r.inputs) & set(rule.inputs)]
    where = None
    if rule.condition is not None:
        allowed = ("in",) if rule.kind == "stateless" else ()
        where = sql.render(sql.expression(rule.condition, allowed, unqualified_ok=True))
    source_line = f"{transform.path.name}:{rule.where.line}"
    args = []
    if rule.kind == "denorm":
        assert rule.join_on is not None
        pairs = sql.join_keys(rule.join_on)
        left, right = rule.inputs
        title = f"-- transform {rule.index} ({source_line}): denorm {left} with {right}"
        args += [f"left={input_cte(left)!r}", f"right={input_cte(right)!r}"]
        args.append(f"left_keys=[{', '.join(_jinja_string(sql.render(l)) for l, _ in pairs)}]")
        args.append(f"right_keys=[{', '.join(_jinja_string(sql.render(r)) for _, r in pairs)}]")
        macro = "zync_denorm"
    else:
        (topic,) = rule.inputs
        title = f"-- transform {rule.index} ({source_line}): stateless {topic}"
        args.append(f"input={input_cte(topic)!r}")
        macro = "zync_stateless"
    if where:
        args.append(f"where={_jinja_string(where)}")
    if after:
        args.append(f"after={after!r}")
    call = f"{{% call {macro}(\n        " + ",\n        ".join(args) + "\n    ) -%}"
    return (
        f"{title}\nrule_{rule.index} as (\n    {call}\n        {_projection(rule, value_fields)}\n"
        f"    {{%- endcall %}}\n)"
    )


def pending_model(model: str) -> str:
    return f"{model}__pending"


def render_model(transform: Transform, project_root: Path) -> str:
    value_fields = _value_fields(transform.rules)
    source = transform.path.resolve().relative_to(project_root.resolve()) if transform.path.resolve().is_relative_to(project_root.resolve()) else transform.path
    meta = {
        "zync_output_topic": transform.output_topic,
        "zync_inputs": [{"topic": i.topic, "table": i.table} for i in transform.inputs],
    }
    parts = [
        f"{{#- {GENERATED.format(source=source)} #}}",
        "{{ config(\n"
        "    materialized='incremental',\n"
        "    incremental_strategy='merge',\n"
        "    file_format='delta',\n"
        "    partition_by=['kind'],\n"
        f"    meta={meta!r},\n"
        ") }}",
        f"{{%- set zync = zync_state({transform.output_topic!r}) %}}",
        "",
        "with",
        "",
    ]
    ctes = []
    for item in transform.inputs:
        ctes.append(
            f"-- pending {item.topic} records: past the cursor, not yet done for this output\n"
            f"{input_cte(item.topic)} as (\n"
            f"    {{{{ zync_pending(source({SOURCE_NAME!r}, {item.table!r}), {item.topic!r}, zync) }}}}\n)"
        )
    for n, rule in enumerate(transform.rules):
        ctes.append(_rule_cte(rule, transform, list(transform.rules[:n]), value_fields))
    unions = "\n    union all\n".join(f"    select * from rule_{r.index}" for r in transform.rules)
    ctes.append(f"events as (\n{unions}\n)")
    parts.append(",\n\n".join(ctes))
    inputs = ",\n".join(
        f"        {{'cte': {input_cte(i.topic)!r}, 'expire_after': "
        f"{repr(i.expire_after.as_macro_arg()) if i.expire_after else 'none'}}}"
        for i in transform.inputs
    )
    parts += [
        "",
        "{{ zync_output_rows(\n"
        "    'events',\n"
        f"    inputs=[\n{inputs}\n    ],\n"
        f"    output_topic={transform.output_topic!r},\n"
        f"    value_fields={value_fields!r},\n"
        "    state=zync,\n"
        ") }}",
        "",
    ]
    return "\n".join(parts)


def render_pending_model(transform: Transform, project_root: Path) -> str:
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
        for text in texts:
            for column in sql.parse(text).find_all(exp.Column):
                parts = [p.name for p in column.parts]
                node = column
                while isinstance(node.parent, exp.Dot) and node.parent.this is node:
                    node = node.parent
                    parts.append(node.expression.name)
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
                       notes: list[str] | None = None) -> list[GeneratedFile]:
    """Check every transform file and render every generated file; raise on the first error.

    schemas: table -> its schema (or None when not known yet); field paths are
    checked against it. notes collects what could not be checked.
    """
    # Mirror files (top level `mirrors:`) compile in compiler/mirrors.py; their raw tables join the sources.
    mirror_files = [mirrors.load_mirrors(p) for p in paths if mirrors.is_mirror_file(p)]
    transforms = [load_transform(p) for p in paths if p not in {m.path for m in mirror_files}]
    if schemas is not None:
        for t in transforms:
            found = check_fields(t, schemas)
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
        files.append(GeneratedFile(MODELS_FOLDER / f"{t.model}.sql", render_model(t, project_root)))
        files.append(GeneratedFile(MODELS_FOLDER / f"{t.model}.yml", render_properties(t, relative(t.path))))
        files.append(GeneratedFile(MODELS_FOLDER / f"{pending_model(t.model)}.sql", render_pending_model(t, project_root)))
    files += [GeneratedFile(path, text) for path, text in mirrors.compile_mirrors(mirror_files, relative)]
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
