"""A raw pool's contract beside its rows (ingest/pool.py writes it; zync run's versions and folds read it).

Each pooled topic's key and value types are a table property, set by the commit
whose rows first needed them; that commit also names the topics whose types it
changed, so a reader of the log alone knows which topics' mirrors a new schema
concerns. Each data file holds one topic, so its `kafka.topic` statistics name it.
"""

from __future__ import annotations

import json

# The raw source's meta naming the pool a pooled topic's rows are in (models/raw/__sources.yml).
POOL_META = "zync_pool"
TYPES_PROPERTY = "zync.pool.types"  # topic -> {"key": Spark type JSON, "value": ...}
CHANGED_PROPERTY = "zync.pool.changed"  # the topics whose types the commit that set it changed (a JSON list)


def file_topic(stats: dict) -> str | None:
    """The one topic a data file holds, from its statistics (None: several, or not known)."""
    low = (stats.get("minValues") or {}).get("kafka", {}).get("topic")
    high = (stats.get("maxValues") or {}).get("kafka", {}).get("topic")
    return low if low is not None and low == high else None


def changed_topics(metadata_text: str) -> list[str]:
    """The topics a pool's commit changed the types of, from the commit's metaData action (its JSON text)."""
    configuration = json.loads(metadata_text)["metaData"].get("configuration") or {}
    return json.loads(configuration.get(CHANGED_PROPERTY) or "[]")
