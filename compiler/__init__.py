"""`zync etl compile`: transform YAML -> dbt models, properties and sources (via sqlglot)."""

from compiler.build import compile_transforms, transform_files, write_outputs

__all__ = ["compile_transforms", "transform_files", "write_outputs"]
