"""Scratch dbt projects: the project's dbt_project.yml, macros/ and seeds/, models compiled from a test's own YAML.

A test writes its transform or mirror YAML; `make_scratch_project` compiles it
with the real compiler into a project folder that links the real macros/ and
seeds/ (or the test's own seeds) and uses the real profiles/, so the
committed models stay untouched. dbt runs in-process, on the test session's
SparkSession. Tables live in the target schema: give them unique names.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from dbt.cli.main import dbtRunner

from compiler import compile_transforms, write_outputs
from compiler.schemas import SchemaSource

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "zync"
PARTIAL_PARSE = Path("target") / "partial_parse.msgpack"

# The first parse of a scratch project with the real dbt_project.yml, given to every new one: dbt's
# partial parsing then parses only the files that differ (its models) instead of every macro again,
# ~1.5 s off each new project's first command. A project with vars of its own parses whole, as dbt
# sees the vars changed.
_parsed_macros: bytes | None = None


@dataclass
class DbtRun:
    """A finished in-process dbt invocation: its result and the log lines it printed."""

    result: object
    messages: list[str] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return bool(self.result.success)

    @property
    def exception(self) -> BaseException | None:
        return self.result.exception

    @property
    def results(self) -> list:
        """The node results of the command (run, test, build, show): each with node, status, message."""
        return list(getattr(self.result.result, "results", None) or [])

    def statuses(self) -> dict[str, str]:
        """{node name: status} of the nodes the command ran (run, test, build)."""
        return {r.node.name: str(r.status) for r in self.results}


def run_dbt(project: Path, *args: str, expect_success: bool = True) -> DbtRun:
    """dbt `args` in this process against the project folder; on an unexpected failure, what failed and why."""
    messages: list[str] = []
    back = Path.cwd()
    os.chdir(project)  # dbt writes its logs/ and target/ below the working folder
    try:
        result = dbtRunner(callbacks=[lambda event: messages.append(event.info.msg)]).invoke(
            [*args, "--project-dir", str(project), "--profiles-dir", str(ROOT / "profiles")])
    finally:
        os.chdir(back)
    _keep_parse(project)
    done = DbtRun(result, messages)
    if expect_success and not done.success:
        failed = [f"{r.node.name}: {r.status}: {r.message}" for r in done.results
                  if str(r.status) not in ("success", "pass")]
        raise AssertionError(f"dbt {' '.join(args)} failed: {result.exception or failed or result.result}\n"
                             + "\n".join(messages[-30:]))
    return done


def _keep_parse(project: Path) -> None:
    global _parsed_macros
    parsed = project / PARTIAL_PARSE
    if _parsed_macros is None and parsed.exists() and (
            (project / "dbt_project.yml").read_bytes() == (ROOT / "dbt_project.yml").read_bytes()):
        _parsed_macros = parsed.read_bytes()


def seed_partial_parse(folder: Path) -> None:
    """Give a new project folder the first scratch project's parse (its macros parsed), when there is one."""
    if _parsed_macros is not None:
        (folder / PARTIAL_PARSE).parent.mkdir(exist_ok=True)
        (folder / PARTIAL_PARSE).write_bytes(_parsed_macros)


@dataclass
class ScratchProject:
    path: Path
    spark: object | None = None
    prefix: str = ""  # of its tables and topics, when the test names them so
    # Session settings around each dbt command, given the SparkSession (e.g. as `zync run` runs a small run).
    engine: Callable[[object], AbstractContextManager] = nullcontext

    def dbt(self, *args: str, expect_success: bool = True) -> DbtRun:
        with self.engine(self.spark):
            return run_dbt(self.path, *args, expect_success=expect_success)

    def run(self, model: str, expect_success: bool = True) -> DbtRun:
        return self.dbt("run", "--select", model, expect_success=expect_success)

    def pending(self, model: str) -> list:
        """The rows of the model's pending report (a view, created on first use)."""
        view = f"{model}__pending"
        if not self.spark.catalog.tableExists(f"{SCHEMA}.{view}"):
            self.run(view)
        return self.rows(view)

    def rows(self, table: str, where: str = "true") -> list:
        return self.spark.sql(f"select * from {SCHEMA}.{table} where {where}").collect()

    def table(self, name: str) -> str:
        return f"{SCHEMA}.{self.prefix}_{name}"

    def topic(self, name: str) -> str:
        return f"{self.prefix}{name}"


def set_dbt_vars(project: Path, **values) -> None:
    """Set dbt vars in a project folder's own dbt_project.yml (a copy, never the repository's)."""
    settings = project / "dbt_project.yml"
    loaded = yaml.safe_load(settings.read_text())
    loaded.setdefault("vars", {}).update(values)
    settings.write_text(yaml.safe_dump(loaded, sort_keys=False))


def make_scratch_project(folder: Path, transforms: dict[str, str], seeds: dict[str, str] | None = None,
                         schemas: SchemaSource | None = None, spark=None, prefix: str = "",
                         engine: Callable[[object], AbstractContextManager] = nullcontext,
                         topics: Callable[[], Iterable[str]] | None = None) -> ScratchProject:
    """A dbt project in `folder` (replaced if there) with the transform files {name: YAML} compiled into models/.

    seeds: {file name: CSV text} instead of the project's seeds/; schemas: what
    the compiler checks field paths against (e.g. the warehouse's raw tables);
    engine: the session settings around each dbt command (ScratchProject.engine);
    topics: the broker's topic names, for mirror entries that name `topics:`.
    """
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "transforms").mkdir(parents=True)
    shutil.copy(ROOT / "dbt_project.yml", folder / "dbt_project.yml")
    (folder / "macros").symlink_to(ROOT / "macros", target_is_directory=True)
    if seeds is None:
        (folder / "seeds").symlink_to(ROOT / "seeds", target_is_directory=True)
    else:
        (folder / "seeds").mkdir()
        for name, text in seeds.items():
            (folder / "seeds" / name).write_text(text)
    paths = []
    for name, text in transforms.items():
        path = folder / "transforms" / name
        path.write_text(textwrap.dedent(text))
        paths.append(path)
    write_outputs(compile_transforms(paths, folder, schemas=schemas, topics=topics), folder)
    seed_partial_parse(folder)
    return ScratchProject(folder, spark, prefix, engine)


# What a user's project folder holds besides its own transforms (linked from this repository): what
# `zync run` and the `zync` verbs need when run as a subprocess in the folder.
USER_PROJECT_LINKS = ("macros", "seeds", "profiles", ".local", "jvm")


def user_project(folder: Path, transforms: dict[str, str]) -> Path:
    """A user's project folder (replaced if there): the real dbt_project.yml copied, macros/, seeds/,
    profiles/, the jars (.local/) and jvm/ linked, the transform or mirror files {name: YAML} in
    transforms/, nothing compiled: the caller runs `zync etl compile` in it, as a user does."""
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "transforms").mkdir(parents=True)
    shutil.copy(ROOT / "dbt_project.yml", folder / "dbt_project.yml")
    for name in USER_PROJECT_LINKS:
        (folder / name).symlink_to(ROOT / name, target_is_directory=True)
    for name, text in transforms.items():
        (folder / "transforms" / name).write_text(textwrap.dedent(text))
    return folder


def drop_relation(spark, name: str) -> None:
    """Drop `name` (database.table) whether a table or a view; a mirror's base (`<name>__base`) too.

    A mirror's name is a view over its base table, and Spark refuses DROP TABLE of a view.
    """
    for relation in (name, f"{name}__base"):
        if spark.catalog.tableExists(relation):
            kind = "view" if spark.catalog.getTable(relation).tableType == "VIEW" else "table"
            spark.sql(f"drop {kind} if exists {relation}")
