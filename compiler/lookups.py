"""Lookup tables (dbt seeds or models joined through ref()): where they are and which columns they have.

A seed's columns are its CSV header, so expressions over a seed lookup are
checked at compile time; a model's columns are known only to dbt, so
expressions over a model lookup are checked when dbt runs.
"""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from compiler import expressions as sql
from compiler.spec import Rule, Shape, Text, Transform, TransformError


def _project_paths(project_root: Path, key: str, default: str) -> list[Path]:
    """The folders dbt_project.yml lists under key (seed-paths, model-paths), as dbt reads them."""
    config_file = project_root / "dbt_project.yml"
    config = yaml.safe_load(config_file.read_text()) if config_file.exists() else None
    folders = (config or {}).get(key) or [default]
    return [project_root / folder for folder in folders]


def seed_file(project_root: Path, ref: str) -> Path | None:
    """The seed CSV dbt loads as `ref`, if there is one (dbt names a seed after its file)."""
    for folder in _project_paths(project_root, "seed-paths", "seeds"):
        for path in sorted(folder.rglob(f"{ref}.csv")) if folder.is_dir() else []:
            return path
    return None


def is_model(project_root: Path, ref: str, generated: set[str]) -> bool:
    if ref in generated:
        return True
    folders = [f for f in _project_paths(project_root, "model-paths", "models") if f.is_dir()]
    return any(any(folder.rglob(f"{ref}.{suffix}")) for folder in folders for suffix in ("sql", "py"))


def seed_columns(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8-sig") as f:
        return next(csv.reader(f), [])


def _texts(shape: Shape) -> list[Text]:
    if isinstance(shape, Text):
        return [shape]
    return [t for sub in (shape or {}).values() for t in _texts(sub)]


def _rule_texts(rule: Rule) -> list[Text]:
    return [*_texts(rule.key), *_texts(rule.value), *(t for t in (rule.condition,) if t is not None),
            *(j.on for j in rule.joins)]


def check_lookups(transform: Transform, project_root: Path, generated_models: set[str]) -> list[str]:
    """Check every lookup column an expression names against its seed's header; return notes on the rest."""
    notes: list[str] = []
    columns: dict[str, tuple[list[str], Path]] = {}
    for lookup in transform.lookups:
        seed = seed_file(project_root, lookup.ref)
        if seed is not None:
            columns[lookup.name] = (seed_columns(seed), seed)
        elif is_model(project_root, lookup.ref, generated_models):
            notes.append(f"{lookup.where}: lookup {lookup.name} reads model {lookup.ref}: "
                         "its columns are not checked (dbt checks them when it runs)")
        else:
            notes.append(f"{lookup.where}: lookup {lookup.name}: ref({lookup.ref!r}) is neither a seed nor a model "
                         "of this project (a package's?): its columns are not checked")
    for rule in transform.rules:
        joined = {j.lookup for j in rule.joins}
        for text in _rule_texts(rule):
            for column in sql.parse(text).find_all(sql.exp.Column):
                path = sql.column_path(column)
                if path[0] not in joined or path[0] not in columns or len(path) < 2:
                    continue  # records are checked against the raw schemas; misuse is refused when rendered
                names, seed = columns[path[0]]
                if not any(name.lower() == path[1].lower() for name in names):
                    raise TransformError(
                        text.where, f"unknown column `{path[1]}` in lookup {path[0]} (seed {seed.name}); "
                        f"its columns are: {', '.join(names) or 'none'}", text.sql)
                if len(path) > 2:
                    raise TransformError(text.where, f"`{'.'.join(path)}`: a seed's column `{path[1]}` is a plain "
                                         "value, it has no fields", text.sql)
    return notes
