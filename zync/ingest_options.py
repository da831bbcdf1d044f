"""Per-topic ingest options kept in the project: the meta of the raw table's dbt source.

`zync etl compile` writes them into models/raw/__sources.yml from the transform
files' inputs (`errors.tolerance: all`), so `zync from-kafka` and `zync run`
(which reads the same meta from dbt's manifest) ingest a topic alike.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from zync.config import project_dir
from zync.errors import ZyncError

TOLERANCES = ("none", "all")  # Kafka Connect's errors.tolerance
DEFAULT_TOLERANCE = "none"
SOURCES_FILE = Path("models") / "raw" / "__sources.yml"
TOLERANCE_META = "zync_errors_tolerance"


def configured_tolerance(topic: str, root: Path | None = None) -> str | None:
    """The project's errors.tolerance for `topic`, or None if the project says nothing of it."""
    try:
        path = (root or project_dir()) / SOURCES_FILE
    except ZyncError:
        return None  # not run from a project: the flag or the default decides
    if not path.is_file():
        return None
    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ZyncError(f"{path}: not valid YAML ({e}); run `zync etl compile` again") from None
    for source in loaded.get("sources") or []:
        for table in source.get("tables") or []:
            meta = table.get("meta") or {}
            if meta.get("zync_topic") == topic and meta.get(TOLERANCE_META):
                return str(meta[TOLERANCE_META])
    return None
