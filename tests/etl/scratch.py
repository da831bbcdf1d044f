"""Scratch dbt projects for ETL tests: the project's macros and seeds, your own models.

A test compiles its transform YAML into a project under tmp_path that links the
real macros/ and seeds/ and uses the real profiles/, then runs dbt in-process
(the session's SparkSession) against it, so the project's own models/ stay
untouched. Tables live in the target schema: give them unique names.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlparse

from compiler import compile_transforms, write_outputs
from compiler.schemas import SchemaSource, delta_table_schemas

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "zync"

# Raw tables in the shape `zync from-kafka` writes, with a small Debezium-like value.
RAW_DDL = (
    "kafka struct<topic: string, partition: int, offset: bigint, timestamp: timestamp>, "
    "key struct<id: bigint>, "
    "value struct<op: string, after: struct<id: bigint, ref: bigint, name: string>>"
)
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


@dataclass
class Project:
    path: Path
    spark: object

    def dbt(self, *args: str, expect_success: bool = True):
        from dbt.cli.main import dbtRunner

        os.chdir(self.path)
        result = dbtRunner().invoke(
            [*args, "--project-dir", str(self.path), "--profiles-dir", str(ROOT / "profiles")]
        )
        if expect_success and not result.success:
            raise AssertionError(f"dbt {' '.join(args)} failed: {result.exception or result.result}")
        return result

    def run(self, model: str, expect_success: bool = True):
        return self.dbt("run", "--select", model, expect_success=expect_success)

    def pending(self, model: str) -> list:
        """The rows of the model's pending report (a view, created on first use)."""
        view = f"{model}__pending"
        if not self.spark.catalog.tableExists(f"{SCHEMA}.{view}"):
            self.run(view)
        return self.rows(view)

    def rows(self, table: str, where: str = "true") -> list:
        return self.spark.sql(f"select * from {SCHEMA}.{table} where {where}").collect()


def make_project(tmp_path: Path, spark, transforms: dict[str, str], seeds: dict[str, str] | None = None,
                 schemas: SchemaSource | None = None) -> Project:
    """A dbt project in tmp_path/project with the given transform files compiled into models/.

    seeds: {file name: CSV text} to use instead of the project's seeds/;
    schemas: what the compiler checks field paths against (e.g. warehouse_schemas(spark)).
    """
    project = tmp_path / "project"
    (project / "transforms").mkdir(parents=True)
    shutil.copy(ROOT / "dbt_project.yml", project / "dbt_project.yml")
    (project / "macros").symlink_to(ROOT / "macros")
    if seeds is None:
        (project / "seeds").symlink_to(ROOT / "seeds")
    else:
        (project / "seeds").mkdir()
        for name, text in seeds.items():
            (project / "seeds" / name).write_text(text)
    paths = []
    for name, text in transforms.items():
        path = project / "transforms" / name
        path.write_text(textwrap.dedent(text))
        paths.append(path)
    write_outputs(compile_transforms(paths, project, schemas=schemas), project)
    return Project(project, spark)


def warehouse_schemas(spark) -> SchemaSource:
    """The raw tables' schemas as `zync etl compile` reads them: from their Delta logs in the warehouse."""
    warehouse = Path(urlparse(spark.conf.get("spark.sql.warehouse.dir")).path)
    return delta_table_schemas(warehouse, SCHEMA)


def drop_tables(spark, *relations: str) -> None:
    """Drop tables and views by name (a model's `__pending` companion is a view)."""
    for name in relations:
        if not spark.catalog.tableExists(f"{SCHEMA}.{name}"):
            continue
        kind = "view" if spark.catalog.getTable(f"{SCHEMA}.{name}").tableType == "VIEW" else "table"
        spark.sql(f"drop {kind} if exists {SCHEMA}.{name}")


def raw_row(topic: str, offset: int, key: int | None, op: str | None, id: int | None = None,
            ref: int | None = None, name: str | None = None, partition: int = 0, seconds: int | None = None):
    """One raw record; op None is a tombstone. seconds: Kafka timestamp after EPOCH (default: offset)."""
    stamp = EPOCH + timedelta(seconds=offset if seconds is None else seconds)
    value = None if op is None else (op, (id if id is not None else key, ref, name))
    return ((topic, partition, offset, stamp), None if key is None else (key,), value)


def append_raw(spark, table: str, rows: list, files: int = 1, ddl: str = RAW_DDL) -> None:
    """Append rows to a raw table in one commit (creating it), as `files` files split by offset."""
    # Run alone, these tests may be the first to use the schema (from-kafka creates it too).
    spark.sql(f"create database if not exists {SCHEMA}")
    frame = spark.createDataFrame(rows, ddl)
    if files > 1:
        frame = frame.repartitionByRange(files, "kafka.offset")
    else:
        frame = frame.coalesce(1)
    frame.write.format("delta").mode("append").saveAsTable(f"{SCHEMA}.{table}")
