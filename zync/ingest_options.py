"""Per-topic ingest options kept in the project: the meta of the raw table's dbt source.

`zync etl compile` writes them into models/raw/__sources.yml from the transform
files' inputs (`errors.tolerance: all`, `pool:`), so `zync from-kafka` and `zync run`
(which reads the same meta from dbt's manifest) ingest a topic alike.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import yaml

from zync.config import project_dir
from zync.errors import ZyncError
from zync.pools import POOL_META

TOLERANCES = ("none", "all")  # Kafka Connect's errors.tolerance
DEFAULT_TOLERANCE = "none"
SOURCES_FILE = Path("models") / "raw" / "__sources.yml"
TOLERANCE_META = "zync_errors_tolerance"
# libyaml's parser where PyYAML was built with it: the pure-Python one takes seconds for a 200-table file.
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def configured_tolerance(topic: str, root: Path | None = None) -> str | None:
    """The project's errors.tolerance for `topic`, or None if the project says nothing of it."""
    meta = _topic_meta(topic, root)
    return str(meta[TOLERANCE_META]) if meta and meta.get(TOLERANCE_META) else None


class PooledTopic(NamedTuple):
    """Where the project keeps a pooled topic: its raw pool and its raw view (table names, no database)."""

    pool: str
    view: str


def configured_pool(topic: str, root: Path | None = None) -> PooledTopic | None:
    """The raw pool the project keeps `topic` in (a mirror entry's `pool:`), or None: a raw table of its own."""
    meta = _topic_meta(topic, root)
    return PooledTopic(str(meta[POOL_META]), str(meta["name"])) if meta and meta.get(POOL_META) else None


def _topic_meta(topic: str, root: Path | None) -> dict | None:
    """The meta of `topic`'s raw source (its table name under "name"), or None if the project says nothing of it."""
    try:
        path = (root or project_dir()) / SOURCES_FILE
    except ZyncError:
        return None  # not run from a project: the flag or the default decides
    try:
        stat = path.stat()
    except OSError:
        return None
    return _raw_sources(str(path), stat.st_mtime_ns, stat.st_size).get(topic)


@lru_cache(maxsize=4)
def _raw_sources(path: str, mtime_ns: int, size: int) -> dict[str, dict]:
    """{topic: its raw source's meta and table name} of a sources file, read once per version of it.

    `zync run` asks for each topic of a whole database as it starts; the file holds every raw
    table's source (~1.9 KB each), and reading it again per topic cost ~1.7 s a topic at 200.
    """
    try:
        loaded = yaml.load(Path(path).read_text(), Loader=SafeLoader) or {}  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        raise ZyncError(f"{path}: not valid YAML ({e}); run `zync etl compile` again") from None
    found: dict[str, dict] = {}
    for source in loaded.get("sources") or []:
        for table in source.get("tables") or []:
            meta = table.get("meta") or {}
            if meta.get("zync_topic"):
                entry = found.setdefault(meta["zync_topic"], {"name": table.get("identifier") or table["name"]})
                for key, value in meta.items():  # a topic read in two places: what either says
                    entry.setdefault(key, value)
    return found
