"""Replay of dead letters: take those that now can be taken into the raw table, remove them from the
dead-letter table.

Exactly once: the raw rows land first, in one idempotent commit (a running ingest of the table
stops at its next commit, as with any second writer), then one delete; a replay killed between
the two finds its rows in the raw table next time and only deletes them. A message that still
cannot be taken stays, with its first error; nothing is dead-lettered twice.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import functions as F

from ingest.commit import Committer
from ingest.dead_letters import coordinates, stored_message
from ingest.decode import Decoder, Message
from ingest.schemas import IncompatibleChangeError
from ingest.topic import TopicState
from zync.progress import Progress
from zync.wire import DecodeError, schema_id_of


def replay_dead_letters(spark, state: TopicState, decoder: Decoder, committer: Committer,
                        progress: Progress) -> tuple[int, int]:
    """(replayed, still dead) for one topic, its state resumed from its tables."""
    topic = state.topic
    state.tolerance = "none"  # a replay fails whole rather than dead-letter again
    if not state.dead_table.exists():
        progress.log("replay", topic=topic, note=f"no dead-letter table {state.dead_table.label}")
        return 0, 0
    rows = state.dead_table.frame(topic).orderBy("kafka.partition", "kafka.offset").collect()
    wanted: dict[int, set[int]] = {}
    for row in rows:
        wanted.setdefault(row["kafka"]["partition"], set()).add(row["kafka"]["offset"])
    landed: set[tuple[int, int]] = set()
    if rows and state.table.exists():
        landed = {(r["partition"], r["offset"]) for r in spark.table(state.table.sql_name)
                  .where((F.col("kafka.topic") == F.lit(topic)) & coordinates(wanted))
                  .select("kafka.partition", "kafka.offset").collect()}
    taken: list[Message] = []
    failing: list[str] = []
    for row in rows:
        m = stored_message(row)
        if (m.partition, m.offset) in landed:
            continue  # a replay killed between its two commits: only the delete is left
        try:
            m = replace(m, key_schema_id=schema_id_of(m.key, m.where + " key"),
                        value_schema_id=schema_id_of(m.value, m.where + " value"))
            for part, schema_id in (("key", m.key_schema_id), ("value", m.value_schema_id)):
                state.schemas.accept(part, schema_id, m.where, m.offset, m.partition)
            located = decoder.locate_error([m])
            if located is not None:
                raise located
        except DecodeError as e:  # IncompatibleChangeError is a ZyncError, not a DecodeError
            failing.append(f"{m.where}: {e}")
            continue
        except IncompatibleChangeError as e:
            failing.append(str(e).split("\n")[0])
            continue
        taken.append(m)
    if taken:
        state.messages = taken
        committer.commit(state)
        committer.wait()
    done = {*landed, *((m.partition, m.offset) for m in taken)}
    if done:
        by_partition: dict[int, set[int]] = {}
        for p, o in done:
            by_partition.setdefault(p, set()).add(o)
        state.dead_table.remove(topic, by_partition)
    progress.log("replay", topic=topic, table=state.table.label, replayed=len(taken),
                 removed=len(done), still_dead=len(failing),
                 first_still_dead=failing[0][:300] if failing else None)
    return len(taken), len(failing)
