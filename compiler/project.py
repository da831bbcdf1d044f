"""Compile a project's transform and mirror files as `zync etl compile` does, for the CLI and `zync run`.

The raw tables' schemas come from the warehouse (field paths are checked
against them) and, for mirror entries naming `topics:`, the topic names from
the target's broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from compiler.build import GeneratedFile, compile_transforms, transform_files, write_outputs
from compiler.schemas import delta_table_schemas
from zync import kafka_client
from zync.config import Target
from zync.errors import ZyncError


@dataclass
class Compiled:
    sources: list[Path]  # the transform and mirror files compiled
    generated: list[GeneratedFile]
    written: list[Path] = field(default_factory=list)  # the generated files whose text changed
    notes: list[str] = field(default_factory=list)  # what could not be checked


def compile_project(target: Target, root: Path, files: list[Path] | None = None) -> Compiled:
    """Compile `files` (default: every transform file of the project) and write what changed."""
    sources = files or transform_files(root)
    if not sources:
        raise ZyncError(f"no transform files given and none in {root / 'transforms'}")
    warehouse = target.spark_conf.get("spark.sql.warehouse.dir", str(root / "spark-warehouse"))
    compiled = Compiled(sources, [])
    compiled.generated = compile_transforms(sources, root, schemas=delta_table_schemas(warehouse, target.schema),
                                            notes=compiled.notes, topics=lambda: kafka_client.topic_names(target))
    compiled.written = write_outputs(compiled.generated, root)
    return compiled
