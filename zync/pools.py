"""A raw pool's contract beside its rows (ingest/pool.py writes it; zync run's versions and folds read it).

Each pooled topic's key and value types are a table property, set by the commit
whose rows first needed them; that commit also names the topics whose types it
changed, so a reader of the log alone knows which topics' mirrors a new schema
concerns. A commit writes one data file, its rows in (topic, partition, offset)
order, whose `add` action carries a tag (TOPICS_TAG) with each topic's row count
and largest offset per partition: what a topic's growth, freshness and reach are
read from, with no file opened. (One file a topic made the pool's compaction
read thousands of small files.)
"""

from __future__ import annotations

import json

# The raw source's meta naming the pool a pooled topic's rows are in (models/raw/__sources.yml).
POOL_META = "zync_pool"
TYPES_PROPERTY = "zync.pool.types"  # topic -> {"key": Spark type JSON, "value": ...}
CHANGED_PROPERTY = "zync.pool.changed"  # the topics whose types the commit that set it changed (a JSON list)
TOPICS_TAG = "zync.pool.topics"  # an add's tag: {topic: {"rows": n, "offsets": {partition: largest offset}}}


def file_topic(stats: dict) -> str | None:
    """The one topic a data file holds, from its statistics (None: several, or not known)."""
    low = (stats.get("minValues") or {}).get("kafka", {}).get("topic")
    high = (stats.get("maxValues") or {}).get("kafka", {}).get("topic")
    return low if low is not None and low == high else None


def topics_tag(counts: dict[str, dict[int, tuple[int, int]]]) -> dict[str, str]:
    """The tags of a pool file holding, per topic and partition, (rows, largest offset)."""
    return {TOPICS_TAG: json.dumps({topic: {"rows": sum(n for n, _ in parts.values()),
                                            "offsets": {str(p): o for p, (_, o) in sorted(parts.items())}}
                                    for topic, parts in sorted(counts.items())}, separators=(",", ":"))}


def file_topics(add: dict, stats: dict) -> dict[str, dict]:
    """{topic: {"rows": n, "offsets": {partition: offset}}} of a data file: from a pool file's tag, else
    from statistics naming one topic (rows and the largest offset of a single partition); {} if unknown."""
    tag = (add.get("tags") or {}).get(TOPICS_TAG)
    if tag:
        return {t: {"rows": int(v["rows"]), "offsets": {int(p): int(o) for p, o in v["offsets"].items()}}
                for t, v in json.loads(tag).items()}
    topic = file_topic(stats)
    if topic is None or stats.get("numRecords") is None:
        return {}
    low, high = stats["minValues"].get("kafka", {}), stats["maxValues"].get("kafka", {})
    offsets = ({int(high["partition"]): int(high["offset"])}
               if "partition" in high and low.get("partition") == high["partition"] and "offset" in high else {})
    return {topic: {"rows": int(stats["numRecords"]), "offsets": offsets}}


def changed_topics(metadata_text: str) -> list[str]:
    """The topics a pool's commit changed the types of, from the commit's metaData action (its JSON text)."""
    configuration = json.loads(metadata_text)["metaData"].get("configuration") or {}
    return json.loads(configuration.get(CHANGED_PROPERTY) or "[]")
