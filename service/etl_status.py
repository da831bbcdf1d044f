"""`zync etl status`: where each transform stands, read from its tables and Kafka.

Per input topic/partition of every transform: the cursor, the latest raw
offset and how far it is past the cursor, the pending and expired records and
the age of the oldest pending one. Per output: the last output offset and how
far the Kafka topic is behind it. Everything else is read with DataFrame
expressions, so no name from a transform file is spliced into a query; but
what a cursor is and which records are pending are the project's one
definitions (macros/etl/cursor/zync_cursors.sql and
macros/etl/pending/zync_stored_pending.sql, which the models, the `__pending`
view and the data tests read too), rendered by dbt in this process with the
tables' quoted names and escaped topics.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from confluent_kafka import KafkaException, TopicPartition
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from compiler.mirrors import MirrorFile, expand_project_patterns, is_mirror_file, load_mirrors
from compiler.spec import load_transform
from zync import kafka_client
from service.failures import Failures, failures_file
from service.freshness import freshness_file, read_freshness
from service.project import DbtProject
from zync.config import Target, project_dir
from zync.errors import ZyncError
from zync.spark import spark_session
from zync.tables import MIRROR_BASE_SUFFIX, dead_letter_table_name, qualified
from zync.transactions import cut_table_name, settled_table_name

KAFKA_TIMEOUT_S = 5.0
# The one definition of a pending record, which the `__pending` view and the zync_pending_age test read too.
PENDING_MACRO = "zync_stored_pending"
# The one definition of a cursor, which the models' runs and the data tests read too.
CURSORS_MACRO = "zync_cursors"
# The one definition of a mirror's cursor, which the mirrors' runs read too (JSON, for many tables at once).
MIRROR_CURSORS_MACRO = "zync_mirror_cursors_json"
# The status's own dbt artifacts, apart from a hand-run dbt's target/ and zync run's.
TARGET_PATH = Path("target") / "zync-etl-status"
# pending_sql(raw table, topic) -> the SQL of an output's pending records of that input
PendingSql = Callable[[str, str], str]


@dataclass(frozen=True)
class PartitionStatus:
    partition: int
    cursor: int | None  # None: no cursor row yet
    latest_offset: int | None  # None: nothing landed in this partition
    pending: int
    expired: int
    oldest_pending_age_s: int | None
    dead_letters: int = 0  # in the raw table's dead-letter table (errors.tolerance: all), not replayed
    # Of those, at offsets below the cursor: a replay lands them where this output no longer reads.
    dead_letters_below_cursor: int = 0

    @property
    def behind(self) -> int | None:
        """Raw records at or past the cursor (what the next run still has to look at)."""
        if self.cursor is None or self.latest_offset is None:
            return None
        return max(self.latest_offset + 1 - self.cursor, 0)


@dataclass(frozen=True)
class InputStatus:
    topic: str
    table: str
    note: str | None = None  # why there are no figures (e.g. the raw table is missing)
    partitions: list[PartitionStatus] = field(default_factory=list)


@dataclass(frozen=True)
class OutputStatus:
    topic: str
    model: str
    last_offset: int | None  # None: no out row yet
    kafka_next_offset: int | None  # the topic's high-water mark; None if unknown
    kafka_note: str | None = None
    table_note: str | None = None

    @property
    def unpublished(self) -> int | None:
        if self.kafka_next_offset is None:
            return None
        return (self.last_offset + 1 if self.last_offset is not None else 0) - self.kafka_next_offset


@dataclass(frozen=True)
class MirrorPartition:
    partition: int
    cursor: int | None  # the largest raw offset folded into the mirror's base; None: none yet
    latest_offset: int | None
    # Raw records past the cursor: the mirror's view applies them on every read until a fold.
    not_folded: int = 0

    @property
    def behind(self) -> int | None:
        if self.latest_offset is None:
            return None
        return max(self.latest_offset - (self.cursor if self.cursor is not None else -1), 0)


@dataclass(frozen=True)
class MirrorStatus:
    source: Path
    model: str
    topic: str
    table: str
    note: str | None = None  # why there are no figures
    partitions: list[MirrorPartition] = field(default_factory=list)
    cut: str | None = None  # with consistency: transaction, where its connector's cut stands


@dataclass(frozen=True)
class TransformStatus:
    source: Path
    output: OutputStatus
    inputs: list[InputStatus]
    # With inputs at their connector's cut (`consistency: transaction`): where each connector's cut stands
    # and how many transactions it gave up on (expired, never whole), which the output then took as they came.
    cuts: list[str] = field(default_factory=list)


def _table_name(target: Target, name: str) -> str:
    return qualified(target, name).replace("`", "")


def _input_status(spark, target: Target, topic: str, table: str, output: DataFrame | None,
                  cursor_rows: DataFrame | None, pending_sql: PendingSql) -> InputStatus:
    """Figures of one input for one output table (`output` None: the model is not built yet).

    cursor_rows: the output's cursors (CURSORS_MACRO's rows, a DataFrame; None with `output`).
    pending_sql(raw table, topic): the stored definition of this output's pending records, as SQL.
    """
    name = _table_name(target, table)
    if not spark.catalog.tableExists(name):
        return InputStatus(topic, name, note=f"no table yet (run `zync from-kafka --topic {topic}`)")
    raw = spark.table(name).where(F.col("kafka.topic") == F.lit(topic))
    latest = {r["partition"]: r["latest"] for r in
              raw.groupBy(F.col("kafka.partition").alias("partition")).agg(F.max("kafka.offset").alias("latest")).collect()}
    cursors: dict[int, int] = {}
    expired: dict[int, int] = {}
    pending_raw = raw  # no output table: nothing is done, so every record waits
    if output is not None:
        mine = output.where(F.col("kafka.topic") == F.lit(topic))
        cursors = {r["partition"]: r["cursor_offset"] for r in
                   cursor_rows.where(F.col("topic") == F.lit(topic)).collect()}
        if "status" in output.columns:
            expired = {r["partition"]: r["n"] for r in
                       mine.where((F.col("kind") == "done") & (F.col("status") == "expired"))
                       .groupBy(F.col("kafka.partition").alias("partition")).agg(F.count("*").alias("n")).collect()}
        pending_raw = spark.sql(pending_sql(table, topic))
    now = F.unix_timestamp(F.current_timestamp())
    pending = {r["partition"]: (r["n"], r["age"]) for r in
               pending_raw.groupBy(F.col("kafka.partition").alias("partition"))
               .agg(F.count("*").alias("n"), (now - F.unix_timestamp(F.min("kafka.timestamp"))).alias("age")).collect()}
    dead, dead_below = _dead_letters(spark, name, topic, cursors)
    partitions = sorted(set(latest) | set(cursors) | set(dead))
    return InputStatus(topic, name, partitions=[
        PartitionStatus(p, cursors.get(p), latest.get(p), pending.get(p, (0, None))[0], expired.get(p, 0),
                        pending.get(p, (0, None))[1], dead.get(p, 0), dead_below.get(p, 0))
        for p in partitions
    ])


def _dead_letters(spark, raw_name: str, topic: str, cursors: dict[int, int]) -> tuple[dict[int, int], dict[int, int]]:
    """Dead letters per partition, and how many of them lie below the output's cursor."""
    name = dead_letter_table_name(raw_name)
    if not spark.catalog.tableExists(name):
        return {}, {}
    total, below = {}, {}
    for row in (spark.table(name).where(F.col("kafka.topic") == F.lit(topic))
                .select(F.col("kafka.partition").alias("p"), F.col("kafka.offset").alias("o")).collect()):
        total[row["p"]] = total.get(row["p"], 0) + 1
        if cursors.get(row["p"]) is not None and row["o"] < cursors[row["p"]]:
            below[row["p"]] = below.get(row["p"], 0) + 1
    return total, below


def _kafka_next_offset(target: Target, topic: str) -> tuple[int | None, str | None]:
    """The output topic's high-water mark (partition 0), or why it is unknown."""


    try:
        metadata = kafka_client.admin(target).list_topics(topic=topic, timeout=KAFKA_TIMEOUT_S)
    except KafkaException as e:
        return None, f"Kafka unreachable at {target.kafka.get('bootstrap.servers')}: {e.args[0]}"
    entry = metadata.topics.get(topic)
    if entry is None or entry.error is not None or not entry.partitions:
        return None, "topic not created yet (nothing published)"
    consumer = kafka_client.consumer(target, group="zync-etl-status")
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=KAFKA_TIMEOUT_S)
    except KafkaException as e:
        return None, f"cannot read its offsets: {e.args[0]}"
    finally:
        consumer.close()
    return high, None


def transform_status(spark, target: Target, transform, project: DbtProject, kafka: bool = True) -> TransformStatus:
    """The status of one checked transform (compiler.spec.Transform); `project` renders the pending definition."""
    name = _table_name(target, transform.model)
    output = spark.table(name) if spark.catalog.tableExists(name) else None
    table_note = None if output is not None else f"not built yet (run `dbt run --select {transform.model}`)"
    if output is not None and "kind" not in output.columns:
        raise ZyncError(f"table {name} has no `kind` column, so it is not a zync output table: "
                        f"check `output.model` in {transform.path}")
    last = None
    if output is not None:
        last = (output.where((F.col("kind") == "out") & (F.col("kafka.topic") == F.lit(transform.output_topic)))
                .agg(F.max("kafka.offset")).collect()[0][0])
    next_offset, kafka_note = (_kafka_next_offset(target, transform.output_topic) if kafka
                               else (None, "not asked (--no-kafka)"))

    def render(macro: str, *arguments: str) -> str:
        if project.manifest is None:
            project.parse()
        return project.render_call(macro, *arguments)

    def pending_sql(table: str, topic: str) -> str:
        return render(PENDING_MACRO, qualified(target, transform.model), qualified(target, table), topic)

    # One render per output, as a render costs a dbt compile; each input takes its topic's rows.
    cursor_rows = spark.sql(render(CURSORS_MACRO, qualified(target, transform.model))) if output is not None else None
    inputs = [_input_status(spark, target, i.topic, i.table, output, cursor_rows, pending_sql)
              for i in transform.inputs]
    connectors = sorted({(i.pool, i.transactions) for i in transform.inputs if i.transactions and i.pool})
    return TransformStatus(
        transform.path,
        OutputStatus(transform.output_topic, transform.model, last, next_offset, kafka_note, table_note),
        inputs,
        [_cut_text(spark, target, pool, transactions, "its inputs stop") for pool, transactions in connectors],
    )


def _mirror_table(spark, target: Target, mirror) -> tuple[str | None, str | None]:
    """Where a mirror (compiler.mirrors.Mirror) keeps its cursor, and a note: its base; a table under the
    mirror's own name (made before mirrors had a base; its next run makes it the base); or none yet."""
    name = _table_name(target, mirror.model)
    # The base a run folds into (macros/mirror/materialization/zync_mirror_base_relation.sql).
    base = name + MIRROR_BASE_SUFFIX
    if spark.catalog.tableExists(base):
        return base, None
    if not spark.catalog.tableExists(name):
        return None, f"not built yet (run `dbt run --select {mirror.model}`)"
    if spark.catalog.getTable(name).tableType != "VIEW":
        return name, "stored as a table: its next run makes it the base of a view"
    # A small first build in `zync run` (macros/mirror/materialization/zync_mirror_defers_base.sql).
    return None, "a view over every raw change: its first fold makes its base"


def mirror_cursors(project: DbtProject, tables: list[str]) -> dict[str, dict[int, int]]:
    """Each mirror table's cursor (schema.table -> {partition: offset}) as the mirror's own runs read it
    (MIRROR_CURSORS_MACRO: the cursor its commits carry, RESTOREs followed, else its rows'); one render for all."""
    if not tables:
        return {}
    if project.manifest is None:
        project.parse()
    found = json.loads(project.render_call(MIRROR_CURSORS_MACRO, ",".join(tables)))
    return {table: {int(p): int(o) for p, o in cursor.items()} for table, cursor in found.items()}


def mirror_status(spark, target: Target, source: Path, mirror, table: str | None, note: str | None,
                  cursors: dict[str, dict[int, int]]) -> MirrorStatus:
    """How far one mirror (compiler.mirrors.Mirror) is behind its raw table; `table`, `note`: _mirror_table's."""
    raw_name = _table_name(target, mirror.table)
    status = MirrorStatus(source, mirror.model, mirror.topic, raw_name)
    if not spark.catalog.tableExists(raw_name):
        return replace(status, note=f"no raw table yet (run `zync from-kafka --topic {mirror.topic}`)")
    latest = {r[0]: r[1] for r in spark.table(raw_name).where(F.col("kafka.topic") == F.lit(mirror.topic))
              .groupBy(F.col("kafka.partition")).agg(F.max("kafka.offset")).collect()}
    cursor = cursors.get(table, {}) if table else {}
    past = F.col("kafka.offset") > F.coalesce(
        F.create_map(*[F.lit(x) for p, o in cursor.items() for x in (p, o)])[F.col("kafka.partition")]
        if cursor else F.lit(None), F.lit(-1))
    not_folded = {r[0]: r[1] for r in spark.table(raw_name).where((F.col("kafka.topic") == F.lit(mirror.topic)) & past)
                  .groupBy(F.col("kafka.partition")).count().collect()}
    partitions = [MirrorPartition(p, cursor.get(p), latest.get(p), not_folded.get(p, 0))
                  for p in sorted(set(latest) | set(cursor))]
    cut = (_cut_text(spark, target, mirror.pool, mirror.transactions, "its raw view stops")
           + _settled_text(spark, target, mirror.pool, mirror.transactions)
           if getattr(mirror, "transactions", None) and mirror.pool else None)
    return MirrorStatus(source, mirror.model, mirror.topic, raw_name, note, partitions, cut)


def _cut_text(spark, target: Target, pool: str, transactions: str, whose: str) -> str:
    """Where a connector's cut stands (`consistency: transaction`), from its pool's cut view: `whose` (a
    mirror's raw view, an output's inputs) stop there."""
    table = _table_name(target, cut_table_name(pool))
    rows = (spark.table(table).where(F.col("connector") == F.lit(transactions)).collect()
            if spark.catalog.tableExists(table) else [])
    if not rows or rows[0]["transaction"] is None:
        return (f"{whose} at the cut of {transactions}: no whole transaction in the pool yet "
                "(is the connector's provide.transaction.metadata on?)")
    cut = rows[0]
    age = _age(int(time.time() - cut["committed_at"].timestamp())) if cut["committed_at"] else "-"
    expired = f"; {cut['expired']} transactions expired (never whole)" if cut["expired"] else ""
    return (f"{whose} at the cut of {transactions}: after transaction {cut['transaction']}, "
            f"committed at the source {age} ago{expired}")


def _settled_text(spark, target: Target, pool: str, transactions: str) -> str:
    """Where the connector's settled cut stands (`zync run --settle-every`), '' if it has none."""
    table = _table_name(target, settled_table_name(pool))
    if not spark.catalog.tableExists(table):
        return ""
    newest = (spark.table(table).where(F.col("connector") == F.lit(transactions))
              .orderBy(F.col("end_offset").desc()).limit(1).collect())
    if not newest:
        return ""
    settled = newest[0]
    age = _age(int(time.time() - settled["committed_at"].timestamp())) if settled["committed_at"] else "-"
    return (f"; its base settled at transaction {settled['transaction'] or '(the initial snapshot)'}, committed at "
            f"the source {age} ago (zync_settled_cut)")


def collect(target: Target, paths: list[Path], kafka: bool = True) -> list[TransformStatus | MirrorStatus]:
    """The status of every transform file given: each output's, and each mirror's of a `mirrors:` file."""

    loaded = [load_mirrors(p) if is_mirror_file(p) else load_transform(p) for p in paths]
    mirror_files = [f for f in loaded if isinstance(f, MirrorFile)]
    if any(f.patterns for f in mirror_files):
        topics = kafka_client.topic_names(target) if kafka else set()
        expanded = dict(zip([f.path for f in mirror_files],
                            expand_project_patterns(mirror_files, topics, project_dir())))
        loaded = [expanded.get(item.path, item) if isinstance(item, MirrorFile) else item for item in loaded]
    spark = spark_session(target)
    # Parsed only when an output table is there to count pending records for; dbt runs on this process's Spark.
    project = DbtProject(project_dir(), target.spark_output_name, TARGET_PATH)
    places = {(item.path, m.model): _mirror_table(spark, target, m)
              for item in loaded if isinstance(item, MirrorFile) for m in item.mirrors}
    cursors = mirror_cursors(project, sorted({table for table, _ in places.values() if table}))
    statuses: list[TransformStatus | MirrorStatus] = []
    for item in loaded:
        if isinstance(item, MirrorFile):
            statuses += [mirror_status(spark, target, item.path, m, *places[item.path, m.model], cursors)
                         for m in item.mirrors]
        else:
            statuses.append(transform_status(spark, target, item, project, kafka=kafka))
    return statuses


# --- rendering -----------------------------------------------------------------

def _age(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(int(seconds), 0)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def _number(value: int | None, missing: str = "-") -> str:
    return missing if value is None else str(value)


def _table(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    return [indent + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows]]


def _render_mirror(status: MirrorStatus) -> list[str]:
    lines = [f"{status.model} (mirror of {status.topic}, {status.source})"]
    rows = [[status.topic, "-", status.note, "", ""]] if status.note and not status.partitions else []
    for p in status.partitions:
        rows.append([status.topic, str(p.partition), _number(p.cursor, "none yet"), _number(p.latest_offset),
                     str(p.not_folded)])
    if not rows:
        rows.append([status.topic, "-", "none yet", "-", "0"])
    # Not folded: in the mirror's view already, applied over its base on each read until a run folds them.
    lines += _table(["input", "partition", "folded cursor", "latest offset", "not folded"], rows)
    if status.note and status.partitions:
        lines.append(f"  {status.note}")
    if status.cut:
        lines.append(f"  {status.cut}")
    return lines + [""]


def render(statuses: list[TransformStatus | MirrorStatus]) -> str:
    """Readable tables: one block per transform, inputs first, then the output; one per mirror."""
    lines: list[str] = []
    for status in statuses:
        if isinstance(status, MirrorStatus):
            lines += _render_mirror(status)
            continue
        out = status.output
        lines.append(f"{out.topic} (model {out.model}, {status.source})")
        rows = []
        for item in status.inputs:
            if item.note:
                rows.append([item.topic, "-", item.note, "", "", "", "", "", ""])
                continue
            if not item.partitions:
                rows.append([item.topic, "-", "none yet", "-", "-", "0", "0", "-", "0"])
            for p in item.partitions:
                dead = str(p.dead_letters) + (f" ({p.dead_letters_below_cursor} below cursor)"
                                              if p.dead_letters_below_cursor else "")
                rows.append([item.topic, str(p.partition), _number(p.cursor, "none yet"), _number(p.latest_offset),
                             _number(p.behind), str(p.pending), str(p.expired), _age(p.oldest_pending_age_s), dead])
        lines += _table(["input", "partition", "cursor", "latest offset", "behind cursor", "pending", "expired",
                         "oldest pending", "dead letters"], rows)
        if any(p.dead_letters for item in status.inputs for p in item.partitions):
            lines.append("  dead letters: messages ingest could not take (errors.tolerance all); see "
                         "<raw table>__dead_letters, replay with `zync from-kafka --topic T --replay-dead-letters`")
        if out.table_note:
            kafka = out.table_note
        elif out.kafka_note:
            kafka = out.kafka_note
        elif out.unpublished:
            kafka = f"{out.unpublished} out rows not published yet (run `zync to-kafka --table {out.model}`)"
        else:
            kafka = "up to date"
        lines += _table(["output", "last offset", "kafka next offset", "kafka"],
                        [[out.topic, _number(out.last_offset, "none yet"), _number(out.kafka_next_offset), kafka]])
        lines += [f"  {cut}" for cut in status.cuts]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_failures(root: Path, target_name: str, now: float | None = None) -> str:
    """What a `zync run` of this project and target is failing at now (service/failures.py), or ''."""
    failures = Failures.read(failures_file(root, target_name))
    if not failures:
        return ""
    now = time.time() if now is None else now
    rows = [[f.stage, f.of, f"{f.failures} times in {_age(now - f.since)}", f.error.splitlines()[0][:160]]
            for f in failures.values()]
    return "\n".join(["failing in zync run (the other tables go on; retried with backoff up to a minute):",
                      *_table(["stage", "of", "failing", "last error"], rows), ""])


def render_freshness(root: Path, target_name: str, now: float | None = None) -> str:
    """Each model's freshness as the running `zync run` of this project and target last wrote it, or ''."""
    found = read_freshness(freshness_file(root, target_name))
    if not found or not found.get("models"):
        return ""
    now = time.time() if now is None else now
    rows = []
    for model, figures in found["models"].items():
        newest = figures.get("newest_seconds")
        applied = figures.get("applied_at")
        rows.append([model, figures.get("kind", "-"), "-" if newest is None else f"{newest:.1f}s",
                     "-" if applied is None else f"{_age(now - applied)} ago", _age(figures.get("behind_seconds"))])
    return "\n".join([f"freshness (zync run, as of {_age(now - found['as_of'])} ago): seconds from a change's "
                      "source commit to applied (mirror: queryable; output: published)",
                      *_table(["model", "kind", "newest change", "applied", "behind"], rows), ""])
