"""`zync from-kafka` of topics the project keeps in a raw pool (a mirror entry's `pool:`).

Such a topic's raw table name is a view over its pool (ingest/pool_view.py): the
verb fills the pool, as `zync run` does, so that a script or scheduler ingests a
pooled topic with the same command as any other. One commit per pool and batch,
with the pool's guarantees (ingest/pool.py); a topic that fails stops alone, and
the verb ends with an error naming it once the others are in.
"""

from __future__ import annotations

import time

from ingest.pool import PoolIngest
from zync import kafka_client
from zync.config import Target
from zync.errors import ZyncError
from zync.ingest_options import PooledTopic
from zync.progress import Progress
from zync.tables import qualified

IDLE_POLL_S = 0.5  # between looks at the topics' ends when nothing was new


def pooled_members(target: Target, pooled: dict[str, PooledTopic]) -> dict[str, dict[str, str]]:
    """{pool: {topic: raw view}}, as database.table names in the target's schema."""
    members: dict[str, dict[str, str]] = {}
    for topic, where in sorted(pooled.items()):
        pool = qualified(target, where.pool).replace("`", "")
        members.setdefault(pool, {})[topic] = qualified(target, where.view).replace("`", "")
    return members


def ingest_pooled(target: Target, spark, pooled: dict[str, PooledTopic], progress: Progress,
                  exit_after: float | None = None) -> int:
    """Fill the pools of `pooled` topics until `exit_after` passes with nothing new (None: until interrupted);
    the records committed. Raises once every other topic is in if a topic failed."""
    members = pooled_members(target, pooled)
    jobs = {pool: PoolIngest(target, pool, views, spark) for pool, views in members.items()}
    consumer = kafka_client.consumer(target, group="zync-from-kafka")
    admin = kafka_client.admin(target)
    failed: dict[str, ZyncError] = {}
    total = 0
    idle_since = time.monotonic()
    try:
        for pool, views in members.items():
            progress.log("start", pool=pool, topics=sorted(views))
        while True:
            marks = kafka_client.watermarks(consumer, admin, set(pooled) - set(failed))
            moved = 0
            for pool, job in jobs.items():
                open_topics = set(members[pool]) - set(failed)
                if not open_topics:
                    continue
                result = job.run(marks, open_topics)
                failed.update(result.failed)
                if result.total:
                    moved += result.total
                    progress.commit(pool, result.total, {}, topics=result.records)
                progress.lag = {tp: n for tp, n in job.waiting(marks).items() if tp[0] not in failed}
            total += moved
            if len(failed) == len(pooled):
                break
            if moved:
                idle_since = time.monotonic()
            elif exit_after is not None and time.monotonic() - idle_since >= exit_after:
                break
            else:
                time.sleep(IDLE_POLL_S)
    finally:
        for job in jobs.values():
            job.close()
        consumer.close()
    pools = ", ".join(sorted(members))
    progress.finish(f"{total:,} records of {len(pooled) - len(failed)} topics into raw pool(s) {pools} "
                    f"({progress.commits} commits)", with_rate=True)
    if failed:
        raise ZyncError("\n".join(str(failed[topic]) for topic in sorted(failed)))
    return total
