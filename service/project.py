"""The dbt project as `zync run` sees it: parsed once, its zync models, the raw tables they read.

dbt is invoked in-process (dbtRunner) on the service's own SparkSession, with
the manifest parsed once and kept: a `dbt run` then skips the seconds a parse
costs. The project is parsed again when a file dbt reads changes (models/,
macros/, seeds/, dbt_project.yml, profiles/), found by comparing modification
times at most every LOOK_EVERY_S, which costs a directory walk and no Spark work.

zync's models are found in the manifest by the meta the compiler writes in
their properties: `zync_output_topic` (an output, published by egress) or
`zync_mirror_topic` (a mirror); the raw tables they read are their sources,
whose meta `zync_topic` names the input topic.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dbt.cli.main import dbtRunner

from zync.errors import ZyncError
from zync.ingest_options import TOLERANCE_META
from zync.pools import POOL_META
from zync.tables import MIRROR_BASE_SUFFIX
from zync.transactions import TRANSACTIONS_META, TRANSACTIONS_OF_META

# How often a parsed project's files are looked at again. A whole database's project is a few hundred
# files; walking them every cycle took a tenth of a pool's cycle (a profile of bench/wide.py, 50 tables),
# whose cycles come a few a second. An edit is taken up this much later at most.
LOOK_EVERY_S = 2.0
# What dbt reads to build the manifest; a change to any of these means a new parse.
WATCHED = ("models", "macros", "seeds", "dbt_project.yml", "profiles", "packages.yml")
# zync run's own dbt artifacts, apart from a hand-run dbt's target/ (both may run at once).
TARGET_PATH = Path("target") / "zync-run"
RELATION_NAMES_ONLY = "ZYNC_RELATION_NAMES_ONLY"  # read by macros/admin/spark__list_relations_without_caching.sql


class DbtError(ZyncError):
    """dbt could not parse the project or select its models."""


@dataclass(frozen=True)
class RawInput:
    """A raw table a model reads, and the topic ingest fills it from."""

    topic: str
    table: str  # database.table: the Delta table holding its rows (a raw pool, for a pooled topic)
    errors_tolerance: str | None = None  # the source's zync_errors_tolerance meta (None: unsaid)
    pool_view: str | None = None  # a pooled topic's raw view (database.table), what models read; None: not pooled

    @property
    def pool_topic(self) -> str | None:
        """The topic whose rows of `table` are this input's, where `table` is a raw pool holding many."""
        return self.topic if self.pool_view else None


@dataclass(frozen=True)
class ZyncModel:
    """An output, mirror or history model of the project."""

    name: str
    relation: str  # database.table
    output_topic: str | None  # the topic egress publishes it to; None for a mirror
    inputs: tuple[RawInput, ...]
    # It reads its raw inputs and nothing else (no lookup of another model or table): its run's cost
    # follows what is pending in them (zync run's small-run settings).
    inputs_only: bool = False
    # A mirror's history model (macros/history/): an incremental table, run like an output whenever its raw
    # table moved, with no egress.
    history: bool = False
    # A mirror at its connector's transaction cut (`consistency: transaction`): the connector's transaction
    # topic. Its folds go with the connector's other mirrors' (service/folds.py), so their bases settle on
    # one cut together (service/settled_cuts.py).
    cut_of: str | None = None

    @property
    def kind(self) -> str:
        return "output" if self.output_topic else "history" if self.history else "mirror"

    @property
    def table(self) -> str:
        """The Delta table the model's runs write (database.table): a mirror's base, an output's or a history's own."""
        return self.relation if self.output_topic or self.history else self.relation + MIRROR_BASE_SUFFIX


@dataclass(frozen=True)
class ModelRun:
    """How one model's `dbt run` ended."""

    name: str
    ok: bool
    message: str
    seconds: float = 0.0  # dbt's execution time of the model


def fingerprint(root: Path) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime, size) of every file dbt reads: equal fingerprints, same manifest."""
    found = []
    for name in WATCHED:
        top = root / name
        paths = [top] if top.is_file() else [Path(d) / f for d, _, files in os.walk(top) for f in files]
        for path in paths:
            try:
                stat = path.stat()
            except FileNotFoundError:  # removed while walking: the next look sees it gone
                continue
            found.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(found))


@contextmanager
def relation_names_only() -> Iterator[None]:
    """dbt's relation cache filled with names and kinds only (macros/admin/spark__list_relations_without_caching.sql):
    a run needs no more, and the full listing costs a metastore call per relation of the schema."""
    before = os.environ.get(RELATION_NAMES_ONLY)
    os.environ[RELATION_NAMES_ONLY] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(RELATION_NAMES_ONLY, None)
        else:
            os.environ[RELATION_NAMES_ONLY] = before


class DbtProject:
    """Parse once, select zync's models, run some of them; all in this process."""

    def __init__(self, root: Path, target_name: str, target_path: Path = TARGET_PATH):
        self.root = root
        self.target_name = target_name
        self.target_path = target_path  # relative to root: its own, apart from other dbt processes'
        self.manifest = None
        self._parsed_from: tuple | None = None
        self._next_look = 0.0  # monotonic time of the next look at the files, once parsed

    def _args(self) -> list[str]:
        return ["--project-dir", str(self.root), "--profiles-dir", str(self.root / "profiles"),
                "--target", self.target_name, "--target-path", str(self.root / self.target_path)]

    def _invoke(self, *args: str):
        # dbt prints to stdout unless told not to; its full log still goes to logs/dbt.log. Its usage
        # statistics would cost each run a network call (and this machine's has no way out).
        return dbtRunner(manifest=self.manifest).invoke(
            [*args, *self._args(), "--log-level", "none", "--no-send-anonymous-usage-stats"])

    def stale(self) -> bool:
        """Whether a file dbt reads changed since the last parse (or there was none); once parsed,
        looked at every LOOK_EVERY_S, else False."""
        if self._parsed_from is not None and time.monotonic() < self._next_look:
            return False
        self._next_look = time.monotonic() + LOOK_EVERY_S
        return self._parsed_from != fingerprint(self.root)

    def look_now(self) -> None:
        """Files were just written here (a compile): the next stale() looks at them."""
        self._next_look = 0.0

    def parse(self) -> None:
        """Parse the project and keep the manifest for the runs that follow."""
        before = fingerprint(self.root)
        self.manifest = None
        result = self._invoke("parse")
        if not result.success or result.result is None:
            raise DbtError(f"dbt could not parse the project at {self.root}: {result.exception or result.result}. "
                           "Fix it (`dbt parse` shows the details); zync run tries again when a file changes.")
        self.manifest, self._parsed_from = result.result, before

    def models(self, select: str | None = None) -> list[ZyncModel]:
        """The enabled output, mirror and history models, those matching dbt selection `select` if given."""
        manifest = self.manifest
        found = []
        for node in manifest.nodes.values():
            if node.resource_type != "model":
                continue
            meta = node.config.meta or node.meta or {}
            output_topic, mirror_topic = meta.get("zync_output_topic"), meta.get("zync_mirror_topic")
            history_topic = meta.get("zync_history_topic")
            if not (output_topic or mirror_topic or history_topic):
                continue
            inputs, cut_of = [], None
            for parent in node.depends_on.nodes:
                source = manifest.sources.get(parent)
                if source is not None and mirror_topic and (source.meta or {}).get(POOL_META):
                    cut_of = (source.meta or {}).get(TRANSACTIONS_META) or cut_of
                if source is not None and (source.meta or {}).get("zync_topic"):
                    relation = f"{source.schema}.{source.identifier}"
                    pool = source.meta.get(POOL_META)
                    inputs.append(RawInput(source.meta["zync_topic"], f"{source.schema}.{pool}" if pool else relation,
                                           source.meta.get(TOLERANCE_META), relation if pool else None))
            found.append(ZyncModel(node.name, f"{node.schema}.{node.alias}", output_topic, tuple(inputs),
                                   inputs_only=len(inputs) == len(node.depends_on.nodes),
                                   history=bool(history_topic) and not (output_topic or mirror_topic),
                                   cut_of=cut_of))
        if select:
            chosen = self.select(select)
            found = [m for m in found if m.name in chosen]
        return sorted(found, key=lambda m: m.name)

    def transaction_topics(self) -> dict[str, tuple[RawInput, str]]:
        """Transaction topics whose connector's cut a raw pool keeps (`consistency: transaction`): each
        topic's pooled input (its pool and raw view) and its connector's topic prefix."""
        found = {}
        for source in self.manifest.sources.values():
            meta = source.meta or {}
            if meta.get(TRANSACTIONS_OF_META) and meta.get(POOL_META):
                view = f"{source.schema}.{source.identifier}"
                found[meta["zync_topic"]] = (RawInput(meta["zync_topic"], f"{source.schema}.{meta[POOL_META]}",
                                                      None, view), str(meta[TRANSACTIONS_OF_META]))
        return found

    def select(self, spec: str) -> set[str]:
        """The names of the models dbt selects with `spec` (dbt's selection syntax)."""
        result = self._invoke("ls", "--select", *spec.split(), "--resource-type", "model", "--output", "name")
        if not result.success:
            raise DbtError(f"dbt cannot select {spec!r}: {result.exception or result.result}")
        return set(result.result or [])

    def render_call(self, macro: str, *arguments: str) -> str:
        """The SQL a macro of the project writes for these (text) arguments, rendered by dbt (`compile --inline`).

        How zync's Python reads a definition the dbt project holds, instead of restating it.
        """
        call = f"{{{{ {macro}({', '.join(json.dumps(a) for a in arguments)}) }}}}"  # JSON strings are Jinja strings
        result = self._invoke("compile", "--inline", call, "--no-populate-cache", "--no-write-json")
        nodes = getattr(result.result, "results", None)
        if not result.success or not nodes:
            raise DbtError(f"dbt could not render {macro}: {result.exception or result.result}")
        return nodes[0].node.compiled_code

    def run(self, names: list[str], threads: int | None = None, variables: dict | None = None) -> list[ModelRun]:
        """`dbt run --select names`, one invocation; how each model ended. threads: the profile's if None;
        variables: dbt's --vars."""
        # The results come back in memory: writing manifest.json (~0.7 MB) and run_results.json to
        # target/zync-run after every run would cost each cycle its serialisation and nobody reads them.
        with relation_names_only():
            result = self._invoke("run", "--select", *names, "--no-write-json",
                                  *(["--threads", str(threads)] if threads else []),
                                  *(["--vars", json.dumps(variables)] if variables else []))
        runs = getattr(result.result, "results", None)
        if not runs:
            reason = result.exception or result.result or "no model ran"
            return [ModelRun(name, False, str(reason)) for name in names]
        # The results also hold the project's on-run-end hooks (macros/etl/pending/zync_cache_pending.sql's clean-up).
        ended = [ModelRun(r.node.name, str(r.status) == "success", r.message or "", float(r.execution_time or 0.0))
                 for r in runs
                 if r.node.resource_type == "model"]
        missing = set(names) - {r.name for r in ended}
        return ended + [ModelRun(name, False, "dbt did not run it") for name in sorted(missing)]
