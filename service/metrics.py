"""`zync run`'s Prometheus metrics: what each stage already knows, kept as counters, gauges and histograms.

Every figure comes from what the service computes anyway: the stages'
reports, Kafka's watermarks it polls, the Delta log entries of the commits it
made (service/versions.py), the tables' checksum files, the dbt results. None
costs a Spark job. The engine's heap is asked of the JVM when Prometheus
scrapes, and the topics' lag is refreshed then too (at most once a second),
so a long cycle does not freeze it. docs/reference/metrics.md lists every metric.

The hooks (`ingest_starting`, `ingested`, `runs_starting`, `ran`, ...) are
called by service/run.py on its own thread; Prometheus' scrapes read from the
HTTP server's threads, so the state they share is guarded by one lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from service.freshness import ModelFreshness, Observed, TopicWaits, read_commit, spread, write_freshness
from service.versions import TableVersion, TableVersions
from zync.delta_metadata import checksum_figures
from zync.spark_internals import jvm_of

# Seconds from a change's source commit to applied: a warm cycle is seconds, a backlog minutes to hours.
FRESHNESS_BUCKETS = (0.5, 1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600)
SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800)
LAG_REFRESH_S = 1.0  # a scrape asks Kafka for the watermarks at most this often
FRESHNESS_FILE_EVERY_S = 5.0  # `zync etl status` reads the freshness figures from a file written this often at most


class SpreadHistogram(Collector):
    """A labelled histogram that takes many observations at once, spread evenly between two values.

    prometheus-client's Histogram takes one value per call; a file of 100,000
    changes would cost 100,000 calls. This one adds each bucket's share of a
    file's changes in one step (service/freshness.py spread).
    """

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...], buckets: tuple[float, ...]):
        self.name, self.documentation, self.labelnames, self.buckets = name, documentation, labelnames, buckets
        self._lock = threading.Lock()
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}  # labels -> (counts, [sum, count])

    def observe(self, labels: tuple[str, ...], observed: Observed) -> None:
        counts = spread(observed, self.buckets)
        with self._lock:
            bucket_counts, totals = self._series.setdefault(labels, ([0] * len(self.buckets), [0.0, 0]))
            for i, count in enumerate(counts):
                bucket_counts[i] += count
            totals[0] += observed.count * (observed.low + observed.high) / 2
            totals[1] += observed.count

    def collect(self) -> Iterable[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=list(self.labelnames))
        with self._lock:
            for labels, (counts, (total, count)) in sorted(self._series.items()):
                family.add_metric(list(labels), [(repr(float(b)), c) for b, c in zip(self.buckets, counts)]
                                  + [("+Inf", count)], sum_value=total)
        yield family


class EngineCollector(Collector):
    """The Spark driver JVM, asked at scrape time: alive, heap used, heap after the last GC, heap max."""

    def __init__(self, spark, alive: Callable[[], bool]):
        self.spark = spark
        self.alive = alive

    def heap(self) -> dict[str, float]:
        jvm = jvm_of(self.spark)
        runtime = jvm.java.lang.Runtime.getRuntime()
        after_gc = 0
        for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
            usage = pool.getCollectionUsage()  # at the end of the pool's last collection (None: not collected)
            if str(pool.getType()) == "Heap memory" and usage is not None:
                after_gc += usage.getUsed()
        return {"used": runtime.totalMemory() - runtime.freeMemory(), "after_gc": after_gc,
                "max": runtime.maxMemory()}

    def collect(self) -> Iterable[GaugeMetricFamily]:
        alive = self.alive()
        yield GaugeMetricFamily("zync_engine_alive", "1 while the Spark driver JVM runs, 0 once it has exited",
                                value=1 if alive else 0)
        if not alive:
            return
        try:
            heap = self.heap()
        except Exception:  # noqa: BLE001 - the JVM went away meanwhile: no heap figures this scrape
            return
        yield GaugeMetricFamily("zync_engine_heap_used_bytes", "JVM heap in use now", value=heap["used"])
        yield GaugeMetricFamily("zync_engine_heap_after_gc_bytes",
                                "JVM heap in use at the end of each heap pool's last garbage collection",
                                value=heap["after_gc"])
        yield GaugeMetricFamily("zync_engine_heap_max_bytes", "the JVM heap's limit", value=heap["max"])


class LagCollector(Collector):
    """Refresh the topics' lag from Kafka when scraped (at most every LAG_REFRESH_S): a long cycle polls none."""

    def __init__(self, refresh: Callable[[], None]):
        self.refresh = refresh
        self._at = 0.0
        self._lock = threading.Lock()

    def collect(self) -> Iterable:
        with self._lock:
            if time.monotonic() - self._at >= LAG_REFRESH_S:
                self._at = time.monotonic()
                try:
                    self.refresh()
                except Exception:  # noqa: BLE001 - the broker out of reach: /healthz says so; keep the last figures
                    pass
        return []


class Metrics:
    """Every metric of one `zync run`, and the hooks its stages call."""

    def __init__(self, versions: TableVersions, freshness_file: Path | None = None):
        self.versions = versions
        self.freshness_file = freshness_file
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        topic, model, table = ("topic",), ("model", "kind"), ("table",)
        self.records = Counter("zync_topic_records_ingested", "records ingest committed to the topic's raw table",
                               topic, registry=r)
        self.lag = Gauge("zync_topic_lag_messages", "messages in the topic past what its raw table holds", topic,
                         registry=r)
        self.dead = Counter("zync_topic_dead_letters", "messages of the topic put in its dead-letter table "
                            "(errors.tolerance: all)", topic, registry=r)
        self.runs = Counter("zync_model_runs", "successful dbt runs of the model (a mirror's: folds)", model, registry=r)
        self.failures = Counter("zync_model_failures", "failed dbt runs of the model", model, registry=r)
        self.run_seconds = Histogram("zync_model_run_seconds", "seconds of each dbt run of the model", model,
                                     buckets=SECONDS_BUCKETS, registry=r)
        self.rows = Counter("zync_model_rows_written", "rows the model's runs wrote (an output's out, done and cursor "
                            "rows; a mirror fold's rows inserted, updated and deleted)", model, registry=r)
        self.pending = Gauge("zync_model_rows_pending", "rows committed to the model's raw tables that no run has "
                             "taken yet (an output's next run; a mirror's next fold, its view shows them already)",
                             model, registry=r)
        self.published = Counter("zync_model_records_published", "records egress published to the output's topic",
                                 model, registry=r)
        self.freshness = SpreadHistogram("zync_model_freshness_seconds", "seconds from each change's source commit "
                                         "to applied (mirror: queryable; output: published)", model, FRESHNESS_BUCKETS)
        r.register(self.freshness)
        self.newest = Gauge("zync_model_freshness_newest_seconds", "freshness of the newest change applied last",
                            model, registry=r)
        self.behind = Gauge("zync_model_behind_seconds", "seconds the oldest input the model has not applied has "
                            "waited; 0 when all is applied", model, registry=r)
        self.files = Gauge("zync_table_files", "data files in the table's current version", table, registry=r)
        self.bytes = Gauge("zync_table_bytes", "bytes of the table's current version's data files", table, registry=r)
        self.compactions = Counter("zync_table_compactions", "compactions (OPTIMIZE) of the table", table, registry=r)
        self.compacted = Counter("zync_table_files_compacted", "small files compactions rewrote", table, registry=r)
        self.vacuums = Counter("zync_table_vacuums", "VACUUMs of the table", table, registry=r)
        self.vacuumed = Counter("zync_table_files_vacuumed", "files VACUUM deleted from the table's folder", table,
                                registry=r)
        connector = ("connector",)
        self.cut_committed = Gauge("zync_transaction_cut_committed_timestamp_seconds", "the source commit time of the "
                                   "newest whole transaction the connector's raw views show (consistency: transaction)",
                                   connector, registry=r)
        self.cut_settled = Gauge("zync_transaction_cut_settled_timestamp_seconds", "the source commit time of the "
                                 "newest whole transaction every base of the connector's mirrors holds, recorded in "
                                 "<pool>__settled (the settled cut)", connector, registry=r)
        self.cut_waiting = Gauge("zync_transaction_cut_waiting", "transactions whose END the pool holds that are "
                                 "not behind the connector's cut yet", connector, registry=r)
        self.cut_expired = Gauge("zync_transaction_cut_expired", "transactions given up on as never whole (counted "
                                 "since the connector's first cut)", connector, registry=r)
        self.cut_replayed = Gauge("zync_transaction_cut_replayed", "changes and ENDs the connector sent again of "
                                  "transactions already behind its cut (since this process started): taken, never "
                                  "waited for", connector, registry=r)
        self.stage_failures = Counter("zync_stage_failures", "failures of a stage for one topic, model or table",
                                      ("stage", "of"), registry=r)
        self.cycles = Counter("zync_cycles", "cycles, with work or without", ("work",), registry=r)
        self.cycle_seconds = Histogram("zync_cycle_seconds", "seconds of each cycle that did work",
                                       buckets=SECONDS_BUCKETS, registry=r)
        self.stage_seconds = Histogram("zync_stage_seconds", "seconds of each stage that did work", ("stage",),
                                       buckets=SECONDS_BUCKETS, registry=r)
        self.last_cycle = Gauge("zync_last_cycle_end_timestamp_seconds", "when the last cycle ended (epoch seconds)",
                                registry=r)
        ProcessCollector(namespace="zync", registry=r)  # zync_process_resident_memory_bytes, ...: this process
        self._lock = threading.RLock()
        self._models: dict[str, ModelFreshness] = {}
        self._kinds: dict[str, str] = {}
        self._readers: dict = {}  # raw table (a raw pool: (pool, topic)) -> the models reading it
        self._topics: dict[str, str] = {}  # raw table -> its topic
        self._model_topics: dict[str, set[str]] = {}
        self._waits = TopicWaits()
        self._ingest_started_s = 0.0  # when this cycle's ingest began, before any topic read its marks
        self._dead: dict[str, int] = {}
        self._ingest_from: dict[str, TableVersion | None] = {}
        self._ingest_files: dict[str, list] = {}  # raw table -> what this cycle's ingest committed to it
        self._runs_from: dict[str, TableVersion | None] = {}
        self._written_at = 0.0

    # --- what the service is made of ------------------------------------------------

    def engine(self, spark, alive: Callable[[], bool], jvm_pid: Callable[[], int | None]) -> None:
        """Add the engine's figures: alive and heap (EngineCollector), its process's memory and CPU."""
        self.registry.register(EngineCollector(spark, alive))
        ProcessCollector(namespace="zync_engine", pid=lambda: jvm_pid() or "missing", registry=self.registry)

    def lag_source(self, refresh: Callable[[], None]) -> None:
        self.registry.register(LagCollector(refresh))

    def models(self, models) -> None:
        """The project's models (service/project.py ZyncModel) as the service loaded them."""
        with self._lock:
            self._readers, self._topics, self._model_topics = {}, {}, {}
            for m in models:
                self._kinds[m.name] = m.kind
                self._models.setdefault(m.name, ModelFreshness(m.kind))
                self._model_topics[m.name] = {i.topic for i in m.inputs}
                for i in m.inputs:
                    # A raw pool's files are read per topic: its readers by (pool, topic).
                    self._readers.setdefault((i.table, i.pool_topic) if i.pool_topic else i.table, set()).add(m.name)
                    self._topics[i.table] = i.topic

    def _labels(self, model: str) -> tuple[str, str]:
        return model, self._kinds.get(model, "output")

    # --- ingest -------------------------------------------------------------------------

    def lags(self, waiting: dict[str, int]) -> None:
        """Messages each topic holds past its raw table (every input topic: 0 when none)."""
        now = time.time()
        with self._lock:
            for topic, count in waiting.items():
                self.lag.labels(topic).set(count)
                self._waits.looked(topic, count, now)

    def cut(self, connector: str, committed_ms: int | None, waiting: int, expired: int, replayed: int = 0) -> None:
        """Where a connector's cut stands after its pool's ingest."""
        with self._lock:
            self.cut_replayed.labels(connector).set(replayed)
            if committed_ms is not None:
                self.cut_committed.labels(connector).set(committed_ms / 1000)
            self.cut_waiting.labels(connector).set(waiting)
            self.cut_expired.labels(connector).set(expired)

    def settled(self, connector: str, committed_ms: int | None) -> None:
        """A connector's cut recorded as settled (service/settled_cuts.py)."""
        if committed_ms is not None:
            with self._lock:
                self.cut_settled.labels(connector).set(committed_ms / 1000)

    def ingest_starting(self, tables: Iterable[str]) -> None:
        """The raw tables' versions before this cycle's ingest: its commits are those after."""
        self._ingest_started_s = time.time()
        self._ingest_files = {}
        for table in tables:
            self._ingest_from[table] = self.versions.version(table)

    def ingest_committed(self, table: str) -> None:
        """This cycle's ingest made one commit to `table`, its latest version: its commits are that one
        (a raw pool's: one commit a cycle), found without reading the version before it."""
        until = self.versions.version(table)
        if until is not None:
            self._ingest_from[table] = TableVersion(until.table_id, until.version - 1)

    def ingested(self, topic: str, table: str, records: int, dead_letters: int) -> None:
        """One topic's ingest ended: `records` committed, `dead_letters` in all so far (its Ingest's count)."""
        if records:
            self.records.labels(topic).inc(records)
        if dead_letters > self._dead.get(topic, dead_letters):
            self.dead.labels(topic).inc(dead_letters - self._dead[topic])
        self._dead[topic] = dead_letters
        if not records:
            return
        files = self._ingested_files(table)
        pooled = (table, topic) in self._readers
        if pooled:
            files = [f for f in files if f.topic == topic]
        arrived = self._waits.since(topic) or time.time()
        with self._lock:
            self._waits.ingested(topic, self._ingest_started_s)
            for name in self._readers.get((table, topic) if pooled else table, ()):
                for observed in self._models[name].ingested(files, arrived):
                    self.freshness.observe(self._labels(name), observed)
                self._newest(name)

    def _ingested_files(self, table: str) -> list:
        """The data files this cycle's ingest committed to `table`, read once however many of a raw
        pool's topics ask (service/freshness.py IngestedFile)."""
        known = self._ingest_files.get(table)
        if known is None:
            since, until = self._ingest_from.pop(table, None), self.versions.version(table)
            self._table_figures(table, until)
            commits = self.versions.commits(table, _or_new(since, until), until)
            known = self._ingest_files[table] = [f for actions in commits or [] for f in read_commit(actions).files]
        return known

    # --- dbt ------------------------------------------------------------------------------

    def runs_starting(self, names: Iterable[str], tables: dict[str, str]) -> float:
        """The models about to run (model -> its Delta table); the wall time they start at."""
        for name in names:
            self._runs_from[name] = self.versions.version(tables[name])
        return time.time()

    def ran(self, name: str, table: str, ok: bool, seconds: float, started: float) -> None:
        """One model's run ended."""
        labels = self._labels(name)
        self.run_seconds.labels(*labels).observe(seconds)
        if not ok:
            self.failures.labels(*labels).inc()
            self.stage_failures.labels("dbt", name).inc()
            return
        self.runs.labels(*labels).inc()
        since, until = self._runs_from.pop(name, None), self.versions.version(table)
        self._table_figures(table, until)
        commits = self.versions.commits(table, _or_new(since, until), until)
        self.rows.labels(*labels).inc(sum(read_commit(actions).rows_written for actions in commits or []))
        with self._lock:
            if self._kinds.get(name) in ("output", "history"):
                self._models[name].run_succeeded(started)
            if self._kinds.get(name) == "history":  # applied once its run committed: no egress follows
                for observed in self._models[name].published(time.time()):
                    self.freshness.observe(self._labels(name), observed)
                self._newest(name)

    def pending_rows(self, name: str, rows: int | None) -> None:
        if rows is not None:
            self.pending.labels(*self._labels(name)).set(rows)

    # --- egress, compaction, vacuum -------------------------------------------------------

    def all_published(self, name: str, records: int = 0) -> None:
        """Everything the output's table holds is in its topic now (`records` of it just published)."""
        if records:
            self.published.labels(*self._labels(name)).inc(records)
        with self._lock:
            for observed in self._models[name].published(time.time()):
                self.freshness.observe(self._labels(name), observed)
            self._newest(name)

    def compacted_table(self, table: str, files_removed: int, version: TableVersion | None) -> None:
        self.compactions.labels(table).inc()
        self.compacted.labels(table).inc(files_removed)
        self._table_figures(table, version)

    def vacuumed_table(self, table: str, files_deleted: int) -> None:
        self.vacuums.labels(table).inc()
        self.vacuumed.labels(table).inc(files_deleted)

    def failed(self, stage: str, what: str) -> None:
        if stage != "dbt":  # a model's failure is counted where its run ends (ran)
            self.stage_failures.labels(stage, what).inc()

    def table_seen(self, table: str) -> None:
        """A table's files and bytes as they stand (at start: the tables no stage has written yet)."""
        self._table_figures(table, self.versions.version(table))

    def _table_figures(self, table: str, version: TableVersion | None) -> None:
        if version is None:
            return
        figures = checksum_figures(self.versions.location(table), version.version)
        if figures is not None:
            self.files.labels(table).set(figures[0])
            self.bytes.labels(table).set(figures[1])

    # --- the cycle ------------------------------------------------------------------------

    def cycle(self, reports, seconds: float) -> None:
        """A cycle ended (zync/progress.py StageReport for each stage that did work)."""
        self.cycles.labels("true" if reports else "false").inc()
        self.last_cycle.set(time.time())
        if reports:
            self.cycle_seconds.observe(seconds)
            for report in reports:
                self.stage_seconds.labels(report.stage).observe(report.seconds)
        self.refresh_behind()
        self._write_freshness(force=bool(reports))

    def refresh_behind(self) -> None:
        now = time.time()
        with self._lock:
            for name, fresh in self._models.items():
                since = self._waits.earliest(self._model_topics.get(name, ()))
                self.behind.labels(*self._labels(name)).set(fresh.behind(now, since))

    def _newest(self, name: str) -> None:
        newest = self._models[name].newest_s
        if newest is not None:
            self.newest.labels(*self._labels(name)).set(newest)

    def freshness_now(self) -> dict[str, dict]:
        """Per model: its freshness figures now, as `zync etl status` shows them."""
        now = time.time()
        with self._lock:
            found = {}
            for name, fresh in sorted(self._models.items()):
                since = self._waits.earliest(self._model_topics.get(name, ()))
                found[name] = {"kind": fresh.kind, "newest_seconds": fresh.newest_s, "applied_at": fresh.applied_at,
                               "behind_seconds": round(fresh.behind(now, since), 3)}
            return found

    def _write_freshness(self, force: bool) -> None:
        if self.freshness_file is None or (not force and time.monotonic() - self._written_at < FRESHNESS_FILE_EVERY_S):
            return
        self._written_at = time.monotonic()
        write_freshness(self.freshness_file, self.freshness_now())


def _or_new(since: TableVersion | None, until: TableVersion | None) -> TableVersion | None:
    """`since`, or, for a table that was not there before (made by this commit), the version before its first."""
    if since is None and until is not None:
        return TableVersion(until.table_id, -1)
    return since
