"""`zync run`: one warm engine that keeps every output and mirror up to date.

A cycle runs four stages in order, each only where there is work, after a
look at the broker's topics every few seconds when a mirror entry names
`topics:` (service/discovery.py: a new matching topic gets its mirror):
1. ingest: every input topic with messages past its raw table's offsets is
   read up to where it stood (the from-kafka job, kept warm per topic);
2. dbt: the output models whose raw tables' Delta versions moved since their
   last successful run here, and the mirrors due a fold (service/folds.py: a
   mirror's view already shows what ingest committed), in one in-process
   `dbt run` on this SparkSession;
3. egress: every output table whose Delta version moved since it was last
   published (by this run's dbt or anyone's) is published (the to-kafka job).
4. compaction: every table (raw, output, mirror base) that has had --compact-after
   commits since its last compaction gets its small files compacted
   (service/compaction.py: Delta's OPTIMIZE, no row changed), and the tables whose
   compactions' removed files are older than --vacuum-retention are vacuumed
   (service/vacuum.py). A raw pool is compacted (in Python) and checkpointed
   on a thread beside the cycle, which takes in what it did (_compact_beside).
With `--dbt beside` (service/dbt_stage.py) stage 2's `dbt run` goes on a thread of its own: the
cycles ingest, publish and compact the raw pools while it runs, and the cycle after it ended takes
in its results (_transform_beside).
Each stage tells service/metrics.py what it did (Prometheus' /metrics, with
/healthz beside it: service/http_server.py, service/health.py; systemd's
watchdog: service/watchdog.py), from what it computed anyway.
A cycle with nothing new reads Kafka's watermarks and the tables' Delta log
versions, and nothing else: no query, no MERGE, no commit.

Each stage keeps its own guarantee, and the loop adds no state they depend on:
ingest resumes from the tables' offsets, the ETL from its done rows and
cursor (its MERGE guard stops a concurrent run of the same model), egress
from the output topic's high-water mark. So a kill -9 at any moment, then a
restart, loses and duplicates nothing. The versions each model's last run
saw are kept in a file (RanAt), so a restart runs only the models whose
inputs moved, and its first cycle publishes every output once.
Another process may run any verb or `dbt` meanwhile: a raw table written by
another ingest makes this one's ingest of it stop and resume from the table
the next cycle, and an output table another `dbt run` moved is published here.

SIGINT and SIGTERM finish the step under way, then the run exits 0; so does
a stop signal that reached the Spark JVM too (the run's whole process group
signalled, during its start as well): the step under way is then abandoned,
as a kill -9 would leave it (service/stop_signals.py).

The Spark driver JVM is this process's child. If it dies (killed, out of
memory), nothing more can run here, and a stage failing on it must not be
retried forever: the run checks the JVM after a stage fails, at each cycle
and while idle, and ends with EngineDiedError (exit 1, naming the JVM and its
exit status) so a supervisor starts it again; the restart resumes like
after a kill -9.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from egress.to_kafka import Egress
from ingest.from_kafka import Ingest, ingest_progress
from ingest.pool import BESIDE_CHECKPOINT_INTERVAL, PoolIngest
from ingest.table import PARQUET_SETTINGS, RAW_CHECKPOINT_INTERVAL
from service.compaction import (COMPACT_AFTER_COMMITS, Compaction, checkpoint, compact, compact_pool,
                                compaction_due_after, compaction_state, compactions_per_cycle, last_checkpoint)
from service.dbt_stage import DBT_BESIDE, DBT_IN_CYCLE, DBT_PLACES
from service.discovery import TopicDiscovery
from service.engine_settings import small_run_engine, without_adaptive_execution
from service.failures import Failures, failures_file
from service.folds import FOLD_AFTER_COMMITS, FOLD_AFTER_ROWS, FOLDS_PER_CYCLE, SETTLE_EVERY_S, FoldPolicy
from service.freshness import freshness_file
from service.health import DEFAULT_STALE_AFTER_S, Health, tcp_check
from service.http_server import DEFAULT_ADDRESS, parse_address, serve
from service.json_file import write_json
from service.metrics import Metrics
from service.project import TARGET_PATH, DbtProject, ModelRun, RawInput, ZyncModel
from service.settled_cuts import SettledCuts
from service.stop_signals import PY4J_SEND_FAILED, stopped_with_the_engine
from service.threads import DEFAULT_THREADS
from service.vacuum import DEFAULT_VACUUM_RETENTION_S, VacuumSchedule, vacuum
from service.versions import TableVersion, TableVersions
from service.warm_up import warm_engine
from service.watchdog import Watchdog
from zync import kafka_client
from zync.config import Target, project_dir
from zync.errors import ZyncError
from zync.progress import Progress, StageReport
from zync.spark import spark_session
from zync.spark_internals import driver_process
from zync.transactions import settled_table_name

DEFAULT_INTERVAL_S = 1.0
# How a raw pool is compacted and checkpointed: in Python (ingest/pool_compaction.py) and checkpointed, on a
# thread of its own beside the cycle, unless this setting names "optimize" (Delta's OPTIMIZE), "cycle"
# (compacted as a stage of the cycle, checkpointed by Delta in the commit that reaches its interval, as
# every other table) or "commit-checkpoints" (that alone): what benchmarks compare against.
POOL_COMPACTION_ENV = "ZYNC_POOL_COMPACTION"
# The session settings models leave for their materializations (macros/admin/zync_note_key.sql).
NOTE_PREFIX = "zync.note."
WATCH_POLL_S = 0.1  # how often an idle run asks Kafka whether anything arrived
RETRY_FIRST_S, RETRY_MAX_S = 1.0, 60.0


# dbt vars of every run here: no post-hook count of what an output's run wrote (macros/logging/zync_log_run.sql),
# a query of every run for a line in logs/dbt.log; this run's own log and metrics say what each run did.
RUN_VARIABLES = {"zync_log_run": False}

# Which runs are small: they run on small_run_engine (service/engine_settings.py).
SMALL_RUN_ROWS = 20_000  # rows new to a model's raw tables since its last run here, at most
# A mirror's first build is small only over a raw table of this few commits, each read to count its rows.
FIRST_BUILD_COMMITS = 20


class NothingToRunError(ZyncError):
    """The project has no enabled output or mirror models (matching --select)."""


class EngineDiedError(ZyncError):
    """The Spark driver JVM this process drives has exited: the run cannot go on and ends."""


ENGINE_EXIT_GRACE_S = 2.0  # from a refused py4j call to the dead JVM's exit status


def engine_exit_status(spark) -> tuple[int, int] | None:
    """(pid, exit status) of the driver JVM this process launched if it has exited, else None.

    PySpark keeps the launched JVM's Popen on its gateway; a session whose JVM
    this process did not launch (none here) has no such handle and counts as alive.
    """
    process = driver_process(spark)
    if process is None or process.poll() is None:
        return None
    return process.pid, process.returncode


@dataclass
class Backoff:
    """When a failing topic or model may be tried again: 1 s, 2 s, 4 s ... up to a minute."""

    failures: int = 0
    next_try: float = 0.0

    def failed(self) -> None:
        self.failures += 1
        self.next_try = time.monotonic() + min(RETRY_FIRST_S * 2 ** (self.failures - 1), RETRY_MAX_S)

    @property
    def due(self) -> bool:
        return time.monotonic() >= self.next_try


def _close_quietly(job: Ingest | PoolIngest | None) -> None:
    if job is not None:
        try:
            job.close()
        except Exception:  # noqa: BLE001 - a consumer that cannot close cleanly is gone all the same
            pass


@dataclass
class PooledIngest:
    """What a cycle's raw pools took: records per pool, and what they left behind their marks."""

    records: dict[str, int] = field(default_factory=dict)
    lag: int = 0

    @property
    def total(self) -> int:
        return sum(self.records.values())


@dataclass
class TransformPlan:
    """One dbt stage's models, chosen on the cycle's thread, and what taking in their runs needs."""

    started: float
    current: dict[str, TableVersion | None]  # every raw table's version when they were chosen
    due: dict[str, dict[str, TableVersion | None]]  # model -> the raw versions it runs at
    small: set[str]  # run interpreted (Service.small_models)
    views: set[str]  # first builds that make their view alone (Service.first_views)
    outputs_before: dict[str, TableVersion | None]  # the output tables' versions before the run
    relations: dict[str, str]  # model -> its relation
    tables: dict[str, str]  # model -> its table
    runs_started: float


class RanAt(dict):
    """model -> {raw table: TableVersion} its last successful run saw, kept in a file across restarts.

    Written after the runs it records committed: a run killed before that is
    done again (its inputs' versions differ from the file's), a run killed
    between its commit and the file's write is done again with nothing new
    (no out rows: its done rows are there). So a restart with nothing new runs
    no model, and one after new records runs only the models that read them.
    """

    def __init__(self, path: Path):
        super().__init__()
        self.path = path
        try:
            stored = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):  # none yet, or cut short: every model runs once
            stored = {}
        for model, tables in stored.items():
            self[model] = {t: TableVersion(*v) if v is not None else None for t, v in tables.items()}

    def save(self) -> None:
        write_json(self.path, self, indent=1, sort_keys=True)


class Service:
    def __init__(self, target: Target, select: str | None = None, interval: float = DEFAULT_INTERVAL_S,
                 status: Progress | None = None, root: Path | None = None,
                 compact_after: int = COMPACT_AFTER_COMMITS, threads: int = DEFAULT_THREADS,
                 fold_after_commits: int = FOLD_AFTER_COMMITS, fold_after_rows: int = FOLD_AFTER_ROWS,
                 folds_per_cycle: int = FOLDS_PER_CYCLE, settle_every: float = SETTLE_EVERY_S, metrics: str | None = None,
                 stale_after: float = DEFAULT_STALE_AFTER_S, vacuum_retention: float = DEFAULT_VACUUM_RETENTION_S,
                 warm_up: bool = True, stopping: threading.Event | None = None, dbt: str = DBT_IN_CYCLE):
        """`stopping`: set by a stop signal that came before the run (service/stop_signals.py), shared with it.
        `dbt`: where the dbt stage runs, DBT_IN_CYCLE or DBT_BESIDE (Service._transform_beside)."""
        if threads < 1:
            raise ZyncError(f"--threads must be 1 or more, not {threads}")
        if interval <= 0:
            raise ZyncError(f"--interval must be more than 0, not {interval}")
        if settle_every < 0:
            raise ZyncError(f"--settle-every must be 0 (settled cuts off) or more, not {settle_every}")
        if compact_after < 0:
            raise ZyncError(f"--compact-after must be 0 (never) or more, not {compact_after}")
        if dbt not in DBT_PLACES:
            raise ZyncError(f"--dbt must be one of {', '.join(DBT_PLACES)}, not {dbt!r}")
        self.dbt_beside = dbt == DBT_BESIDE
        # The dbt run under way beside the cycle, if any: its plan and its future.
        self._transforming: tuple[TransformPlan, Future] | None = None
        self._dbt_thread: ThreadPoolExecutor | None = None
        self.target = target
        self.select = select
        self.interval = interval
        self.threads = threads
        self.status = status or Progress.for_run()
        self.spark = spark_session(target)
        self.project = DbtProject(root or project_dir(), target.spark_output_name)
        self.versions = TableVersions(self.spark)
        try:
            self.folds = FoldPolicy(self.versions, fold_after_commits, fold_after_rows, folds_per_cycle)
        except ValueError as e:
            raise ZyncError(str(e)) from None
        self.fold_all = False  # --once: every mirror whose raw table moved folds
        self.watcher = kafka_client.consumer(target, group="zync-run-watch")
        self.admin = kafka_client.admin(target)
        self.discovery = TopicDiscovery(target, self.project.root, self._topic_names)
        self.models: list[ZyncModel] = []
        self.transaction_topics: dict[str, tuple[RawInput, str]] = {}  # (DbtProject.transaction_topics)
        self.ingests: dict[RawInput, Ingest] = {}
        self.pools: dict[str, PoolIngest] = {}  # raw pool (database.table) -> the ingest of all its topics
        self.settled = SettledCuts(self.spark, self.versions)
        self.settle_every = settle_every
        self.egresses: dict[str, Egress] = {}
        # What the last successful run of each model saw: its raw tables' versions (kept across restarts).
        self.ran_at = RanAt(self.project.root / TARGET_PATH / f"ran-at-{target.name}.json")
        # Output models whose last run wrote something: they run again next cycle (see transform).
        self.rerun: set[str] = set()
        # What the last successful run of each model in this process saw (small_models).
        self.last_ok: dict[str, dict[str, TableVersion | None]] = {}
        # Mirrors whose last run in this process made their view and no base (first_views): their
        # first fold makes it (service/folds.py). A restart builds such a mirror's view again, once.
        self.deferred: set[str] = set()
        # The output table version each output was last published at (this process: a restart publishes once).
        self.published_at: dict[str, TableVersion] = {}
        # Per table: commits since its last compaction, and the version they were counted up to.
        self.compact_after = compact_after
        self.uncompacted: dict[str, tuple[TableVersion, int]] = {}
        self.checkpointed: dict[str, tuple[str, int]] = {}  # pool -> (table id, its last checkpoint's version) read
        # A raw pool's compaction under way beside the cycle: (the version it was due at, its future).
        self.compacting: dict[str, tuple[TableVersion, Future]] = {}
        how = {part.strip() for part in os.environ.get(POOL_COMPACTION_ENV, "").split(",")}
        self.pool_compactor = compact if "optimize" in how else compact_pool
        self.pools_beside = "cycle" not in how
        self.checkpoints_beside = self.pools_beside and "commit-checkpoints" not in how and compact_after > 0
        self._beside: ThreadPoolExecutor | None = None
        self._beside_spark = None
        self.backoff: dict[str, Backoff] = {}
        # What fails now, per topic or model, for `zync etl status` (a restart starts with a clean slate).
        self.failures = Failures.start(failures_file(self.project.root, target.name))
        self.stopping = stopping if stopping is not None else threading.Event()
        # The first cycle also warms the engine (see warm_up), then the run says it is ready.
        self.warm_up_first = warm_up
        self.warmed_in: float | None = None  # seconds the warm-up took, if it ran
        self.ready = False  # the first cycle has ended
        logging.getLogger().addFilter(self._quiet_dead_engine)
        try:
            self.vacuums = VacuumSchedule(vacuum_retention)
            self.health = Health(self._engine_problem, lambda: tcp_check(target.catalog_address),
                                 self._broker_problem, stale_after)
        except ValueError as e:
            raise ZyncError(str(e)) from None
        self.watchdog = Watchdog(self.health)
        self.metrics = Metrics(self.versions, freshness_file(self.project.root, target.name))
        self.metrics.engine(self.spark, lambda: engine_exit_status(self.spark) is None, self._engine_pid)
        self.metrics.lag_source(self._refresh_lags)
        self._health_admin = self._lag_watcher = self._lag_admin = None
        self.http = None
        self._serve(metrics)

    # --- metrics and health (service/metrics.py, service/health.py) --------------

    def _serve(self, metrics: str | None) -> None:
        """Serve /metrics and /healthz at --metrics ADDR (default DEFAULT_ADDRESS; `off`: none)."""
        address = parse_address(metrics or DEFAULT_ADDRESS)
        if address is None:
            return
        try:
            self.http = serve(address, self.metrics.registry, self.health)
        except OSError as e:
            if metrics is not None:
                raise ZyncError(f"--metrics {metrics}: cannot serve there: {e}") from None
            # The default address: a second `zync run` on the machine (disjoint --select) must still start.
            self.status.note(f"metrics and /healthz are off: {address[0]}:{address[1]} cannot be served ({e}); "
                             "give this run --metrics HOST:PORT of its own", metrics="off")
            return
        self.status.note(f"metrics at http://{address[0]}:{address[1]}/metrics, health at /healthz",
                         metrics=f"{address[0]}:{address[1]}")

    def _engine_pid(self) -> int | None:
        process = driver_process(self.spark)
        return None if process is None else process.pid

    def _engine_problem(self) -> str | None:
        died = self._engine_died()
        return None if died is None else str(died)

    def _broker_problem(self) -> str:
        # A client of its own: the health check runs on the HTTP server's and the watchdog's threads.
        if self._health_admin is None:
            self._health_admin = kafka_client.admin(self.target)
        self._health_admin.list_topics(timeout=2.0)
        return "ok"

    def _lag_counts(self, marks: kafka_client.Watermarks) -> dict[str, int]:
        """Messages each input topic holds past what its ingest committed (every topic, 0 when none)."""
        counts = {raw.topic: 0 for raw in self.inputs()}
        for job in list(self.ingests.values()):
            for (topic, _), waiting in job.waiting(self.watcher, marks).items():
                counts[topic] = counts.get(topic, 0) + waiting
        for pool in list(self.pools.values()):
            for (topic, _), waiting in pool.waiting(marks).items():
                counts[topic] = counts.get(topic, 0) + waiting
        return counts

    def _refresh_lags(self) -> None:
        """The topics' lag, asked when Prometheus scrapes (a long cycle polls none); its own Kafka clients."""
        if self._lag_watcher is None:
            self._lag_watcher = kafka_client.consumer(self.target, group="zync-run-metrics")
            self._lag_admin = kafka_client.admin(self.target)
        marks = kafka_client.watermarks(self._lag_watcher, self._lag_admin, {i.topic for i in self.inputs()})
        self.metrics.lags(self._lag_counts(marks))

    def _quiet_dead_engine(self, record: logging.LogRecord) -> bool:
        """Drop py4j's traceback (root logger) for each call that met a dead JVM: EngineDiedError says it once."""
        if record.getMessage() != PY4J_SEND_FAILED:
            return True
        # The socket's reset can reach py4j before the kernel reports the killed JVM's exit (the CI run
        # saw it): give the exit a moment to show before deciding the JVM is alive.
        deadline = time.monotonic() + ENGINE_EXIT_GRACE_S
        while engine_exit_status(self.spark) is None:
            if time.monotonic() > deadline:
                return True
            time.sleep(0.05)
        return False

    # --- the project ----------------------------------------------------------

    def _topic_names(self) -> set[str]:
        return kafka_client.named_topics(self.watcher.list_topics(timeout=kafka_client.METADATA_TIMEOUT_S))

    def discover(self) -> None:
        """Give a topic that newly matches a mirror entry's `topics:` its mirror (service/discovery.py)."""
        if not self._try("discover:topics"):
            return
        try:
            found = self.discovery.check()
        except Exception as e:  # noqa: BLE001 - the broker out of reach, a compile error: the project stays as it was
            self._failed("discover", "topics", e if isinstance(e, ZyncError) else ZyncError(str(e)))
            return
        self._succeeded("discover", "topics")
        if found is None:
            return
        if found.written:
            self.project.look_now()
        if found.new:
            self.status.note(f"new topics matching a mirror entry: {', '.join(found.new)}; their mirrors are "
                             "generated in models/mirrors/ and built from each topic's start",
                             topics=found.new, written=[str(p) for p in found.written])
        if found.gone:
            self.status.note(f"topics gone from the broker: {', '.join(found.gone)}; their raw tables and "
                             "mirrors are kept (delete their generated files to drop them)", gone=found.gone)

    def load(self) -> None:
        """Parse the dbt project when a file of it changed, and choose the models."""
        if not self.project.stale():
            return
        self.project.parse()
        models = self.project.models(self.select)
        if not models and self.discovery.has_patterns:
            self.status.note("no model yet: waiting for a topic matching a mirror entry's `topics:`")
        elif not models:
            raise NothingToRunError(
                "no output or mirror models to run" + (f" match --select {self.select!r}" if self.select else "")
                + f": write a transform or mirror file in {self.project.root / 'transforms'}/ and run "
                "`zync etl compile` (the invoices demo's models, from demo/invoices/transforms/, are on only "
                "with ZYNC_DEMO=true)")
        if [m.name for m in models] != [m.name for m in self.models]:
            self.status.note("models: " + ", ".join(f"{m.name} ({m.kind})" for m in models))
        self.models = models
        self.transaction_topics = self.project.transaction_topics()
        self.metrics.models(models)
        for table in sorted({i.table for m in models for i in m.inputs} | {m.table for m in models}):
            self.metrics.table_seen(table)

    def inputs(self) -> list[RawInput]:
        return sorted({i for m in self.models for i in m.inputs}, key=lambda i: (i.table, i.topic))

    # --- stages -----------------------------------------------------------------

    def _try(self, key: str) -> bool:
        backoff = self.backoff.get(key)
        return backoff is None or backoff.due

    def check_engine(self) -> None:
        """Raise EngineDiedError if the Spark JVM has exited (cheap: a waitpid, no call into it)."""
        died = self._engine_died()
        if died is not None:
            raise died

    def _engine_died(self) -> EngineDiedError | None:
        """The error to end with if the Spark JVM has exited, else None."""
        died = engine_exit_status(self.spark)
        if died is None:
            return None
        pid, status = died
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        return EngineDiedError(
            f"the Spark engine (JVM pid {pid}) {how}; zync run cannot go on without it and stops. Start it "
            "again (a supervisor such as systemd restarts it): each stage resumes where its tables and "
            "topics stand, nothing is lost or duplicated")

    def _failed(self, stage: str, what: str, error: Exception) -> None:
        self.check_engine()  # a dead engine fails every stage: end now rather than retry forever
        self.backoff.setdefault(f"{stage}:{what}", Backoff()).failed()
        self.failures.failed(stage, what, str(error))
        self.status.error(stage, what, str(error))
        self.metrics.failed(stage, what)

    def _succeeded(self, stage: str, what: str) -> None:
        if self.backoff.pop(f"{stage}:{what}", None) is not None:
            self.failures.recovered(stage, what)

    def ingest(self) -> StageReport | None:
        """Read every input topic that has new messages into its raw table, --threads topics at once."""
        started, records, tables, lag = time.monotonic(), 0, {}, 0
        self.versions.forget_commits()
        due: list[tuple[RawInput, Ingest]] = []
        try:
            marks = self._watermarks()
        except Exception:  # noqa: BLE001 - a broker out of reach: each topic's ingest says so below
            marks = None
        if marks is not None:
            self.metrics.lags(self._lag_counts(marks))
        pooled = self._ingest_pools(marks)
        records, tables, lag = pooled.total, {t: n for t, n in pooled.records.items() if n}, pooled.lag
        for raw in self.inputs():
            if raw.pool_view or self.stopping.is_set() or not self._try(f"ingest:{raw.topic}"):
                continue
            job = self.ingests.get(raw)
            try:
                if job is None:
                    # The same errors.tolerance as `zync from-kafka` (the source's meta, from the same file).
                    job = self.ingests[raw] = Ingest(self.target, [raw.topic], table=raw.table,
                                                     progress=ingest_progress(quiet=True),
                                                     errors_tolerance=raw.errors_tolerance,
                                                     spark=self.spark.newSession())
                if job.waiting(self.watcher, marks):
                    due.append((raw, job))
            except ZyncError as e:
                self._drop_ingest(raw)
                self._failed("ingest", raw.topic, e)
        self.metrics.ingest_starting(raw.table for raw, _ in due)
        outcomes = self._run_ingests(due, marks)
        self.versions.made(raw.table for raw, _, _ in outcomes)  # a first batch makes its table
        if self.warm_up_first and not self.ready and not pooled.total \
                and not any(isinstance(outcome, int) and outcome for _, _, outcome in outcomes):
            self.warm_up()  # a backlog would have warmed it with real work
        for raw, job, outcome in outcomes:
            self.metrics.ingested(raw.topic, raw.table, outcome if isinstance(outcome, int) else 0,
                                  sum(s.dead_lettered for s in job.states.values()))
            if isinstance(outcome, ZyncError):
                # Another ingest wrote the table (ConcurrentIngestError), a poison message, a schema it
                # cannot take: a new Ingest resumes from the table when this topic is tried again; the
                # other topics go on.
                self._drop_ingest(raw)
                self._failed("ingest", raw.topic, outcome)
                continue
            self._succeeded("ingest", raw.topic)
            if marks is not None:
                # What the run left behind the marks it read to (a stopped run; else 0). Not the job's
                # progress lag: Spark's reader counts it before reading, and it stayed at a first
                # run's whole backlog for every cycle after.
                behind = sum(job.waiting(None, marks).values())
                lag += behind
                self.metrics.lags({raw.topic: behind})
            if outcome:
                records += outcome
                tables[raw.table] = outcome
        if not tables:
            return None
        return StageReport("ingest", time.monotonic() - started, records, {"tables": tables, "lag": lag})

    def _ingest_pools(self, marks: kafka_client.Watermarks | None) -> "PooledIngest":
        """One commit per raw pool holding every due pooled topic's new records (ingest/pool.py).

        A topic that fails stops alone (it backs off as any topic does); a pool that fails as a whole
        (another ingest's commit, the engine's error) fails each of its due topics, and a new
        PoolIngest resumes from the pool when they are tried again.
        """
        done = PooledIngest()
        if marks is None:
            return done
        members: dict[str, dict[str, str]] = {}
        connectors: dict[str, dict[str, str]] = {}  # pool -> transaction topic -> its connector's topic prefix
        for raw in self.inputs():
            if raw.pool_view:
                members.setdefault(raw.table, {})[raw.topic] = raw.pool_view
        for topic, (raw, prefix) in self.transaction_topics.items():
            if raw.table in members:  # the connector's mirrors are chosen (--select)
                members[raw.table][topic] = raw.pool_view
                connectors.setdefault(raw.table, {})[topic] = prefix
        for pool, views in sorted(members.items()):
            allowed = {t for t in views if self._try(f"ingest:{t}")}
            if self.stopping.is_set() or not allowed:
                continue
            try:
                job = self.pools.get(pool)
                if job is not None and job.transactions != connectors.get(pool, {}):
                    self._drop_pool(pool)  # a connector's consistency changed: its cut is kept from the start
                    job = None
                if job is None:
                    job = self.pools[pool] = PoolIngest(
                        self.target, pool, views, self.spark.newSession(),
                        BESIDE_CHECKPOINT_INTERVAL if self.checkpoints_beside else RAW_CHECKPOINT_INTERVAL,
                        transactions=connectors.get(pool))
                job.add_topics(views)
                if not {tp for tp in job.waiting(marks) if tp[0] in allowed} and not job.expiry_due():
                    continue
                self.metrics.ingest_starting(())
                result = job.run(marks, allowed)
                if result.total:  # the pool's version from its own commit, for every stage below: no listing
                    self.versions.committed(pool)
                    self.metrics.ingest_committed(pool)
            except Exception as e:  # noqa: BLE001 - the pool's commit failed: each due topic reports it
                error = e if isinstance(e, ZyncError) else ZyncError(f"ingest into raw pool {pool} failed: {e}")
                self._drop_pool(pool)
                for topic in sorted(allowed):
                    self._failed("ingest", topic, error)
                continue
            for topic in sorted(allowed):
                if topic in result.failed:
                    self._failed("ingest", topic, result.failed[topic])
                    continue
                self._succeeded("ingest", topic)
                self.metrics.ingested(topic, pool, result.records.get(topic, 0), 0)
            for connector, cut in job.cuts.items():
                self.metrics.cut(connector, cut.cut.committed_ms, cut.waiting_transactions, cut.cut.expired,
                                 cut.replayed)
            behind = job.waiting(marks)
            for topic in views:
                self.metrics.lags({topic: sum(n for (t, _), n in behind.items() if t == topic)})
            done.lag += sum(behind.values())
            if result.total:
                done.records[pool] = done.records.get(pool, 0) + result.total
        return done

    def _pooled_yet(self, raw: RawInput) -> bool:
        """Whether a pooled topic has records in its pool, so its raw view is there (True if not pooled)."""
        if not raw.pool_view:
            return True
        job = self.pools.get(raw.table)
        return job is not None and job.has_rows(raw.topic)

    def _drop_pool(self, pool: str) -> None:
        """Forget a raw pool's ingest (a new one resumes from the pool), closing what it kept open."""
        _close_quietly(self.pools.pop(pool, None))

    def warm_up(self) -> None:
        """A first cycle with nothing to read: the engine's first Delta write, MERGE and read, on rows of
        its own (service/warm_up.py).

        Best effort: it only moves a new engine's first-use costs before the first change; if it
        fails, that change pays them, as it would have anyway.
        """
        started = time.monotonic()
        try:
            warm_engine(self.spark)
            self.warmed_in = time.monotonic() - started
        except Exception as e:  # noqa: BLE001 - nothing depends on it
            self.status.note(f"warming the engine failed (the first changes pay for it instead): {e}",
                             warm_up="failed")

    def _drop_ingest(self, raw: RawInput) -> None:
        """Forget a topic's Ingest (a new one resumes from its table), closing what it kept open."""
        _close_quietly(self.ingests.pop(raw, None))

    def _run_ingests(self, due: list[tuple[RawInput, Ingest]], marks: kafka_client.Watermarks | None
                     ) -> list[tuple[RawInput, Ingest, int | ZyncError]]:
        """Run each due topic's ingest up to where its topic stood; (input, job, records or the error).

        Several at once: a small batch's time is mostly the driver's (planning, the Delta log and
        commit, Kafka round trips), which overlaps on the one engine (each thread's calls are its own
        JVM thread; each topic has its own table, consumer and SQL settings: see Ingest's spark).
        """
        def run(raw: RawInput, job: Ingest) -> tuple[RawInput, Ingest, int | ZyncError]:
            if self.stopping.is_set():
                return raw, job, 0
            try:
                return raw, job, job.run(exit_after=0.0, marks=marks)
            except ZyncError as e:
                return raw, job, e
            except Exception as e:  # noqa: BLE001 - Spark's own errors: this topic fails, the others go on
                return raw, job, ZyncError(f"ingest of {raw.topic} into {raw.table} failed: {e}")

        if len(due) <= 1:
            return [run(raw, job) for raw, job in due]
        with ThreadPoolExecutor(max_workers=min(self.threads, len(due)), thread_name_prefix="ingest") as pool:
            return list(pool.map(lambda item: run(*item), due))

    def transform(self) -> StageReport | None:
        """`dbt run` the models whose raw tables moved since their last run here."""
        plan = self._plan_transform()
        if plan is None:
            return None
        return self._take_in(plan, self._run_dbt(plan))

    def _transform_beside(self) -> StageReport | None:
        """The dbt stage on a thread of its own (`--dbt beside`): take in the run that ended since the
        last cycle, or start one; ingest and egress go on meanwhile.

        Only the `dbt run` itself runs beside (_run_dbt): choosing the models and taking in their
        results stay on the cycle's thread, which alone touches what the run's bookkeeping keeps. A
        run taken in starts the next one a cycle later, after the project and topics are looked at again.
        """
        if self._transforming is not None:
            plan, future = self._transforming
            if not future.done():
                return None
            self._transforming = None
            return self._take_in(plan, future.result())
        plan = self._plan_transform()
        if plan is not None:
            if self._dbt_thread is None:
                self._dbt_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dbt")
            self._transforming = (plan, self._dbt_thread.submit(self._run_dbt, plan))
        return None

    def _finish_transform(self) -> None:
        """Wait for a dbt run under way beside the cycle and take it in (a stop, the run's end)."""
        if self._transforming is None:
            return
        plan, future = self._transforming
        self._transforming = None
        try:
            self._take_in(plan, future.result())
        except Exception as e:  # noqa: BLE001 - what a stop cut short: each model resumes from its own table
            if self.stopping.is_set():
                self._abandoned(e)

    def _plan_transform(self) -> TransformPlan | None:
        """The models due now and what their run needs, or None (then the cycle's notes are taken)."""
        started = time.monotonic()
        current = self.versions.versions({i.table for i in self.inputs()})
        due: dict[str, dict[str, TableVersion | None]] = {}
        for model in self.models:
            seen = {i.table: current[i.table] for i in model.inputs}
            if any(v is None for v in seen.values()) or not all(self._pooled_yet(i) for i in model.inputs):
                continue  # a raw table is not there yet: its topic has had no record
            if self.ran_at.get(model.name) != seen and self._try(f"dbt:{model.name}"):
                due[model.name] = seen
        due = self.folds.choose(due, self.models, self.ran_at, everything=self.fold_all, deferred=self.deferred,
                                settling=self.settled.due({m.cut_of for m in self.models if m.cut_of}, self.settle_every)
                                if self.settle_every > 0 else None,
                                lagging=self.settled.lagging)
        if not due or self.stopping.is_set():
            self._pending_rows(current)  # a mirror's raw table moved, its fold not due yet
            self._settle()
            return None
        outputs_before = {m.name: self.versions.version(m.relation) for m in self.models
                          if m.name in due and m.output_topic is not None}
        small = self.small_models(due)
        tables = {m.name: m.table for m in self.models}
        return TransformPlan(started, current, due, small, self.first_views(small), outputs_before,
                             {m.name: m.relation for m in self.models}, tables,
                             self.metrics.runs_starting(due, tables))

    def _run_dbt(self, plan: TransformPlan) -> list[ModelRun]:
        """The plan's one or two `dbt run` invocations; how each model ended."""
        runs: list[ModelRun] = []
        if plan.small:
            with small_run_engine(self.spark):
                runs += self.project.run(sorted(plan.small), variables={
                    **RUN_VARIABLES, **({"zync_mirror_defer_base": sorted(plan.views)} if plan.views else {})})
        # dbt runs the profile's `threads` models at once, each thread on a clone of this session
        # (dbt_zync/thread_sessions.py), made as the invocation starts: the settings set around it
        # here reach every thread, and a mirror's cursor, carried in a session setting
        # (macros/mirror/materialization/zync_mirror_commit_carrying.sql), stays its own.
        if set(plan.due) - plan.small:
            with without_adaptive_execution(self.spark):
                runs += self.project.run(sorted(set(plan.due) - plan.small), variables=RUN_VARIABLES)
        # The models cached their inputs' pending records (macros/etl/pending/zync_cache_pending.sql): this engine
        # lives on, and nothing else here caches, so the memory goes back now.
        self.spark.catalog.clearCache()
        # A model that failed never took the notes its render left for its materialization
        # (macros/admin/zync_leave_note.sql): its invocation is over, so they go too, or a model
        # failing every cycle would add a session setting each time.
        for key in [row.key for row in self.spark.sql("set").collect() if row.key.startswith(NOTE_PREFIX)]:
            self.spark.conf.unset(key)
        return runs

    def _take_in(self, plan: TransformPlan, runs: list[ModelRun]) -> StageReport:
        """What the runs of `plan` did: the models' bookkeeping, metrics and failures; the stage's report."""
        self.versions.made()  # a model's first run makes its table (a mirror's base and view)
        self.rerun.clear()
        for run in runs:
            self.metrics.ran(run.name, plan.tables[run.name], run.ok, run.seconds, plan.runs_started)
            if run.ok:
                self.last_ok[run.name] = plan.due[run.name]
                if run.name in plan.views:
                    self.deferred.add(run.name)
                else:
                    self.deferred.discard(run.name)
                if run.name in plan.outputs_before and \
                        self.versions.version(plan.relations[run.name]) != plan.outputs_before[run.name]:
                    # It wrote: per-key order may have held records back that only a next run can take
                    # (an update whose earlier record was paired in this run), with no new input to
                    # trigger one. Run it again until a run writes nothing.
                    self.ran_at.pop(run.name, None)
                    self.rerun.add(run.name)
                else:
                    self.ran_at[run.name] = plan.due[run.name]
                self._succeeded("dbt", run.name)
            else:
                self._failed("dbt", run.name, ZyncError(run.message))
        self.ran_at.save()
        self._pending_rows(plan.current)
        self._settle()
        ok = [r.name for r in runs if r.ok]
        return StageReport("dbt", time.monotonic() - plan.started, len(ok),
                           {"models": ok, "failed": [r.name for r in runs if not r.ok]})

    def _settle(self) -> None:
        """Record each connector's cut that all its mirrors' bases hold now (service/settled_cuts.py)."""
        if self.settle_every <= 0:
            return
        for pool, job in sorted(self.pools.items()):
            for connector, state in sorted(job.cuts.items()):
                mirrors = [m for m in self.models if m.cut_of == connector]
                if not mirrors or self.stopping.is_set() or not self._try(f"settle:{connector}"):
                    continue
                try:
                    settled = self.settled.after_folds(pool, connector, state.cut, mirrors)
                except Exception as e:  # noqa: BLE001 - the reads at the last settled cut go on; tried again
                    self._failed("settle", connector, ZyncError(
                        f"recording the settled cut of {connector} in {settled_table_name(pool)} failed: {e}"))
                    continue
                self._succeeded("settle", connector)
                if settled is not None:
                    self.metrics.settled(connector, settled.cut.committed_ms)

    def _pending_rows(self, current: dict[str, TableVersion | None]) -> None:
        """Rows each model's raw tables gained since its last run here, from the counts at hand (metrics)."""
        for model in self.models:
            folded = model.kind == "mirror"  # a mirror's runs are folds, which the fold policy counts
            seen = self.ran_at.get(model.name) if folded else self.last_ok.get(model.name)
            if seen is None:
                continue
            rows = 0
            for table in (i.table for i in model.inputs):
                if seen.get(table) == current.get(table):
                    continue
                if not folded:
                    added = self.versions.rows_added(table, seen.get(table), current.get(table))
                else:  # what the fold policy counted this cycle
                    counted = self.folds.counted.get((model.name, table))
                    added = counted.rows if counted and counted.since == seen.get(table) \
                        and counted.until == current.get(table) else None
                if added is None:
                    rows = None
                    break
                rows += added
            self.metrics.pending_rows(model.name, rows)

    def small_models(self, due: dict[str, dict[str, TableVersion | None]]) -> set[str]:
        """The due models whose run is small: it runs interpreted (see `interpreted`).

        A mirror's run is small when it is its base's first build over few raw rows
        (_small_first_build). An output model's run is small when the model reads
        only its raw tables, ran successfully in this process before, and its raw
        tables gained at most SMALL_RUN_ROWS rows since (their Delta logs' counts). What it holds
        back from one run to the next is part of what an earlier small run
        saw, so its pending records stay that few; a first run in a process
        (a backlog after a restart), a backfill, or rows another process
        ingested in bulk take the compiled plan. Which one runs changes
        nothing but the time: the same plan's operators, the same rows.
        """
        small = set()
        for name, seen in due.items():
            model = next(m for m in self.models if m.name == name)
            if model.kind == "mirror":
                if self._small_first_build(model, seen):
                    small.add(name)
                continue
            before = self.last_ok.get(name)
            if not model.inputs_only or before is None:
                continue
            added = [self.versions.rows_added(table, before.get(table), version) for table, version in seen.items()]
            if None not in added and sum(added) <= SMALL_RUN_ROWS:
                small.add(name)
        return small

    def first_views(self, small: set[str]) -> set[str]:
        """The mirrors of `small` (a first build over few raw rows) whose run makes their view alone.

        A first build's base costs a Spark job, a Delta commit and a catalog table, most of a whole
        database's bootstrap at a few thousand rows a table; its view over the raw changes shows the
        same rows (macros/mirror/materialization/zync_mirror_defers_base.sql). A mirror whose last run
        here made its view alone makes its base at its next run (a fold, when its raw table has grown:
        service/folds.py); `zync run --once` makes every base, as it folds everything.
        """
        if self.fold_all:
            return set()
        mirrors = {m.name for m in self.models if m.kind == "mirror"}
        return (small & mirrors) - self.deferred

    def _small_first_build(self, mirror: ZyncModel, seen: dict[str, TableVersion | None]) -> bool:
        """Whether a mirror's run is the first build of its base over at most SMALL_RUN_ROWS raw rows.

        A whole database's bootstrap is one such build per table, a few thousand rows each: its
        window functions compiled cost more than they save (docs/benchmarks.md, "A whole database's
        first build"). A fold merges into a base of any size, and keeps the compiled plan.
        """
        if self.versions.version(mirror.table) is not None:
            return False
        topics = {i.table: i.pool_topic for i in mirror.inputs}
        rows = [self.versions.rows_appended(table, version, FIRST_BUILD_COMMITS, topics.get(table))
                for table, version in seen.items()]
        return None not in rows and sum(rows) <= SMALL_RUN_ROWS

    def publish(self) -> StageReport | None:
        """Publish the new out rows of every output table whose version moved."""
        started, records, topics = time.monotonic(), 0, {}
        for model in self.models:
            if model.output_topic is None or self.stopping.is_set() or not self._try(f"egress:{model.name}"):
                continue
            version = self.versions.version(model.relation)
            if version is None:
                continue
            if self.published_at.get(model.name) == version:
                self.metrics.all_published(model.name)  # a run that wrote nothing applied what it took
                continue
            try:
                job = self.egresses.get(model.name)
                if job is None:
                    job = self.egresses[model.name] = Egress(self.target, model.relation, topic=model.output_topic)
                published = job.publish_once(Progress("to-kafka", quiet=True))
            except ZyncError as e:
                self.egresses.pop(model.name, None)
                self._failed("egress", model.name, e)
                continue
            self._succeeded("egress", model.name)
            if not self.stopping.is_set():  # a stopped publish may have left rows for the next run
                self.published_at[model.name] = version
                self.metrics.all_published(model.name, published)
            if published:
                records += published
                topics[model.output_topic] = published
        if not topics:
            return None
        return StageReport("egress", time.monotonic() - started, records, {"topics": topics})

    def compact(self) -> StageReport | None:
        """Compact the small files of the tables with --compact-after commits since their last compaction.

        At most compactions_per_cycle(...) tables a cycle, the most commits behind first: tables that
        started together reach the threshold together, and compacting them all in one cycle stalled it
        (bench/soak.py). Spread over cycles, each counting from its own compaction, they stay spread.
        """
        if not self.compact_after:
            return None
        started, removed, tables = time.monotonic(), 0, {}
        raw_tables = {i.table for i in self.inputs()}
        pools = {i.table for i in self.inputs() if i.pool_view}
        # While a dbt run is under way beside the cycle, only the raw pools it reads at a version of its
        # own: a compaction of a table it writes would fail it at its commit (or fail itself).
        # A pool's is on a session of its own (_compact_beside); other tables' set this session's
        # settings, which a dbt run's threads copy as they start, so they wait for the run's end.
        candidates = sorted(pools if self._transforming is not None
                            else raw_tables | {m.table for m in self.models} | self.settled.tables)
        due: list[tuple[int, str, TableVersion]] = []
        for table, done, checkpointed in self._compacted_beside():
            if done is not None:
                removed += done.files_removed
                tables[table] = {"files_removed": done.files_removed, "files_added": done.files_added,
                                 "bytes_removed": done.bytes_removed, "beside_s": round(done.seconds, 2)}
            if checkpointed is not None:
                tables.setdefault(table, {})["checkpoint_s"] = round(checkpointed, 2)
        for table in candidates:
            if table in self.compacting or self.stopping.is_set() or not self._try(f"compact:{table}"):
                continue
            version = self.versions.version(table)
            if version is None:
                continue
            counted = self.uncompacted.get(table)
            if counted is None or counted[0].table_id != version.table_id:
                commits, compacted_at = compaction_state(self.spark, table, self.compact_after,
                                                           self.versions.location(table))
                if compacted_at is not None and not self.vacuums.known(table):
                    self.vacuums.compacted(table, compacted_at)  # by an earlier run: its files still wait
            else:
                commits = counted[1] + version.version - counted[0].version
            self.uncompacted[table] = (version, commits)
            compact_due = commits >= compaction_due_after(table, self.compact_after)
            if table in pools and self.pools_beside:
                checkpoint_due = self.checkpoints_beside and self._checkpoint_due(table, version)
                if compact_due or checkpoint_due:
                    self._compact_beside(table, version, compact_due, checkpoint_due)
            elif compact_due:
                due.append((commits, table, version))
        due.sort(key=lambda d: (-d[0], d[1]))
        for _, table, version in due[:compactions_per_cycle(len(candidates), self.compact_after)]:
            if self.stopping.is_set():
                break
            try:
                compactor = self.pool_compactor if table in pools else compact
                done = compactor(self.spark, table, self.versions.location(table),
                                 PARQUET_SETTINGS if table in raw_tables else None)
            except Exception as e:  # noqa: BLE001 - Delta's conflict with a concurrent writer, among others
                self._failed("compact", table, ZyncError(f"compaction failed, no row changed: {e}"))
                continue
            self._succeeded("compact", table)
            # Read from the log as every version here is (no query): the compaction's, if it is the only
            # commit since `version`.
            after = self.versions.version(table) or version
            self.uncompacted[table] = (after, 0)
            if done.files_removed and after == TableVersion(version.table_id, version.version + 1):
                self._passed_over(table, version, after)
            removed += done.files_removed
            tables[table] = {"files_removed": done.files_removed, "files_added": done.files_added,
                             "bytes_removed": done.bytes_removed}
            self.metrics.compacted_table(table, done.files_removed, after)
            if done.files_removed:
                self.vacuums.compacted(table, time.time())
        vacuumed = self.vacuum() if self._transforming is None else {}
        if vacuumed:
            tables.update({t: {**tables.get(t, {}), "files_vacuumed": n} for t, n in vacuumed.items()})
        if not tables:
            return None
        return StageReport("compact", time.monotonic() - started, removed, {"tables": tables})

    def _checkpoint_due(self, table: str, version: TableVersion) -> bool:
        """Whether a pool's last checkpoint is RAW_CHECKPOINT_INTERVAL commits behind `version`.

        Its _last_checkpoint is read again only once the checkpoint last read is that far behind: a
        checkpoint only moves on, and on an object store the read is a request every cycle would wait for."""
        known = self.checkpointed.get(table)
        if known is not None and known[0] == version.table_id and \
                version.version - known[1] < RAW_CHECKPOINT_INTERVAL:
            return False
        at = last_checkpoint(self.versions.location(table))
        self.checkpointed[table] = (version.table_id, at)
        return version.version - at >= RAW_CHECKPOINT_INTERVAL

    def _compact_beside(self, table: str, version: TableVersion, compact_due: bool, checkpoint_due: bool) -> None:
        """Start a raw pool's compaction, its checkpoint or both on the compaction thread, beside the cycle.

        A pool's ingest commits every cycle and each mirror's freshness waits for it: a compaction in
        the cycle held that commit back by its seconds. Beside it, the two only meet at Delta's
        conflict check: the compaction's commit changes no row, and an ingest that meets it commits
        again (ingest/table.py _commit_past_rewrites); the compaction's own commit fails only if
        another compaction removed one of its files, or the pool's metadata changed meanwhile.
        A checkpoint, which Delta would write in the commit that reaches the pool's interval (~1 s for
        a pool), is written here as well: the pool's own interval is set far apart (ingest/pool.py).
        """
        if self._beside is None:
            self._beside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compact")
            self._beside_spark = self.spark.newSession()
        location = self.versions.location(table)

        def upkeep() -> tuple[Compaction | None, float | None]:
            done = self.pool_compactor(self._beside_spark, table, location, PARQUET_SETTINGS) if compact_due else None
            started = time.monotonic()
            if checkpoint_due:
                checkpoint(self._beside_spark, location)
            return done, (time.monotonic() - started) if checkpoint_due else None

        self.compacting[table] = (version, self._beside.submit(upkeep))

    def _compacted_beside(self) -> list[tuple[str, Compaction | None, float | None]]:
        """The pools' compactions beside the cycle that ended since the last look: each counted as the
        cycle's own are (its failure backs off and is reported the same)."""
        finished = []
        for table, (version, future) in list(self.compacting.items()):
            if not future.done():
                continue
            del self.compacting[table]
            try:
                done, checkpointed = future.result()
            except Exception as e:  # noqa: BLE001 - Delta's conflict with a concurrent writer, among others
                self._failed("compact", table, ZyncError(f"compaction failed, no row changed: {e}"))
                continue
            self._succeeded("compact", table)
            if done is None:
                finished.append((table, None, checkpointed))
                continue
            current = self.versions.version(table) or version
            after = TableVersion(version.table_id, done.version) if done.version is not None else current
            commits = current.version - after.version if current.table_id == after.table_id else 0
            self.uncompacted[table] = (current, max(commits, 0))
            if done.files_removed and done.version is not None:
                self._passed_over(table, TableVersion(version.table_id, done.version - 1), after)
            self.metrics.compacted_table(table, done.files_removed, after)
            if done.files_removed:
                self.vacuums.compacted(table, time.time())
            finished.append((table, done, checkpointed))
        return finished

    def vacuum(self) -> dict[str, int]:
        """VACUUM the tables whose compacted files are older than --vacuum-retention (service/vacuum.py)."""
        done = {}
        for table in self.vacuums.due(time.time()):
            if self.stopping.is_set() or not self._try(f"vacuum:{table}"):
                continue
            try:
                result = vacuum(self.spark, table, self.vacuums.retention_s)
            except Exception as e:  # noqa: BLE001 - a reader's or writer's conflict, a table gone: next time
                self._failed("vacuum", table, ZyncError(f"vacuum failed, no row changed: {e}"))
                continue
            self._succeeded("vacuum", table)
            self.vacuums.vacuumed(table, time.time())
            self.metrics.vacuumed_table(table, result.files_deleted)
            done[table] = result.files_deleted
        return done

    def _passed_over(self, table: str, before: TableVersion, after: TableVersion) -> None:
        """A compaction of `table` changed no row: what had seen it at `before` has seen it at `after`.

        Without this, the version a compaction moves would make the models
        reading a raw table run again, and an output be published again, for
        nothing.
        """
        for model, seen in self.ran_at.items():
            if seen.get(table) == before:
                seen[table] = after
        self.ran_at.save()
        for model in self.models:
            if model.table == table and self.published_at.get(model.name) == before:
                self.published_at[model.name] = after

    # --- the loop ---------------------------------------------------------------

    def cycle(self) -> list[StageReport]:
        """One full cycle: ingest, dbt, egress, compaction; the stages that did work."""
        started = time.monotonic()
        self.check_engine()
        if self._transforming is None:  # the models and inputs stay as a dbt run under way beside found them
            self.discover()
            self.load()
        reports = []
        beside = self.dbt_beside and self.ready and not self.fold_all
        for stage in (self.ingest, self._transform_beside if beside else self.transform, self.publish, self.compact):
            report = stage()
            self.check_engine()  # a stage may swallow what a dead engine raised (dbt reports it as a failed run)
            if report is not None:
                reports.append(report)
        seconds = time.monotonic() - started
        self.status.cycle(reports, seconds)
        if not self.ready:
            self.ready = True
            warmed = f" (warming the engine took {self.warmed_in:.1f}s)" if self.warmed_in is not None else ""
            self.status.note(f"ready: the first cycle ended {self.status.elapsed:.1f}s after the start{warmed}",
                             ready=True, warm_up_s=None if self.warmed_in is None else round(self.warmed_in, 2))
        self.metrics.cycle(reports, seconds)
        self.health.cycle_ended()
        self.watchdog.cycle_ended()
        return reports

    def _watermarks(self) -> kafka_client.Watermarks:
        topics = {i.topic for i in self.inputs()} | set(self.transaction_topics)
        return kafka_client.watermarks(self.watcher, self.admin, topics)

    def _has_ingest(self, raw: RawInput) -> bool:
        """Whether an input's ingest is kept here yet (its raw pool's, for a pooled topic)."""
        if raw.pool_view:
            return raw.table in self.pools and raw.topic in self.pools[raw.table].views
        return raw in self.ingests

    def _arrived(self) -> bool:
        """Whether a topic has messages its raw table does not (cheap: Kafka watermarks only)."""
        if not all(self._has_ingest(raw) for raw in self.inputs()):
            return True
        try:
            counts = self._lag_counts(self._watermarks())
            self.metrics.lags(counts)
            return any(counts.values())
        except Exception:  # noqa: BLE001 - the next cycle reports a broker problem properly
            return True

    def wait(self) -> None:
        """Idle until a message arrives, --interval passes, or a stop is asked."""
        deadline = time.monotonic() + self.interval
        while not self.stopping.is_set() and time.monotonic() < deadline:
            if self.stopping.wait(min(WATCH_POLL_S, max(0.0, deadline - time.monotonic()))):
                return
            self.status.tick()
            self.check_engine()
            if (self._transforming is not None and self._transforming[1].done()) or self._arrived():
                return

    def _stopped_with_engine(self) -> bool:
        """Whether the engine ended because a stop signal reached it too, before this process's own
        handler ran (the run's process group signalled)."""
        died = engine_exit_status(self.spark)
        return stopped_with_the_engine(self.stopping, died[1] if died else None)

    def _abandoned(self, error: Exception) -> None:
        first = (str(error) or type(error).__name__).splitlines()[0][:300]
        self.status.note(f"stopping: the step under way was abandoned ({first}); the next start resumes every "
                         "stage where its tables and topics stand", abandoned=first)

    def stop(self, *_args) -> None:
        """Finish the step under way, then end (the signal handler)."""
        self.stopping.set()
        for job in self.egresses.values():
            job.stop()

    def close(self) -> None:
        # With the JVM dead, py4j still meets it after the run ends (objects it frees at exit, the
        # CLI's own shutdown): the filter stays for the rest of the process (CI saw such a traceback).
        if engine_exit_status(self.spark) is None:
            logging.getLogger().removeFilter(self._quiet_dead_engine)
        self.watcher.close()
        for raw in list(self.ingests):
            self._drop_ingest(raw)
        for pool in list(self.pools):
            self._drop_pool(pool)
        if self._dbt_thread is not None:  # a dbt run under way ends with its models' commits
            self._dbt_thread.shutdown(wait=True)
        if self._beside is not None:  # a compaction under way ends with its commit, or leaves a file unnamed
            self._beside.shutdown(wait=True)
        if self.http is not None:
            self.http.shutdown()
            self.http.server_close()

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def run(self, once: bool = False) -> int:
        """Cycle until stopped (or once); the exit status: 1 if --once met an error, else 0."""
        previous = {sig: signal.signal(sig, self.stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        why = "failed"
        self.fold_all = once
        self.warm_up_first = self.warm_up_first and not once  # a single cycle has no later change to warm for
        try:
            while not self.stopping.is_set():
                try:
                    reports = self.cycle()
                    if once and not (self.rerun and reports):
                        break
                    if not reports:
                        self.wait()
                except Exception as e:
                    if self.stopping.is_set() or self._stopped_with_engine():
                        # Asked to stop: what the step met then (most often the JVM the same signal
                        # ended) ends the step, not the run.
                        self._abandoned(e)
                        break
                    # Py4J's errors from a dead JVM (a refused connection) are not zync's: say what happened.
                    died = e if isinstance(e, EngineDiedError) else self._engine_died()
                    if died is None:
                        raise
                    if died is e:
                        raise
                    raise died from e
            why = "stopped" if self.stopping.is_set() else "done"
        finally:
            self._finish_transform()
            self.fold_all = False
            self.watchdog.stopping()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.status.finish_cycles(why)
        return 1 if once and self.status.errors else 0
