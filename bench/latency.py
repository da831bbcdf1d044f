"""Benchmark: time from a database change to its output record, through `zync run` and through the chain of verbs.

    .venv/bin/python bench/latency.py [--rates 10,100,1000] [--duration 120] [--keep]

One command, one run, alone on the machine (its own state folder and ports; it
starts and stops its own Kafka, registry and catalog). For each rate, in turn:

- zync run: a producer writes Debezium invoice and status events at a steady
  rate for --duration seconds (new invoices with their status: denorm pairs;
  status updates; invoice updates; deletes) while one `zync run` process
  (started once, warmed up by one batch before the first rate) runs the
  invoices transform. A consumer reads the output topic; every output record
  is matched, by key and content, to the event that caused it (a denorm pair
  to the later of its two events), and its latency is the time from that
  event's produce call to the moment the record was consumed.
- the anchor: the same stream shape, on topics of its own, through the chain
  of commands a user runs without `zync run`: `zync from-kafka` of each
  topic, `dbt run --select <model>`, `zync to-kafka`, in a loop of cold
  processes.

- with --designs zync-run,zync-run-s3: the same `zync run` twice, one with its tables on local disk,
  one with its warehouse on the S3 server (`zync up --s3`, docs/object-storage.md), measured in turn.

The designs alternate per rate. Printed: p50/p95/p99/max latency, events
and output records, whether lag stayed bounded (every output arrived within
--drain seconds after the producer stopped, and the newest quarter of the
events waited no more than twice as long as the oldest quarter plus 10 s),
and the peak memory of `zync run` (its Python process and Spark JVM). JSON in
bench/out/latency.json. Goals: p50 <= 3 s and p99 <= 10 s at 100 events/s
(the product's own: p50 <= 5 s, p99 <= 15 s); lag bounded at 1,000 events/s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
STATE = ROOT / ".local" / "bench-latency-state"
PROJECTS = STATE / "projects"
PORTS = {"ZYNC_KAFKA_PORT": "24292", "ZYNC_REGISTRY_PORT": "24281", "ZYNC_CATALOG_PORT": "24627",
         "ZYNC_S3_PORT": "24290"}
os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local", "ZYNC_PROJECT_DIR": str(ROOT)})
BIN = ROOT / ".venv" / "bin"
SCHEMAS = ROOT / "demo" / "invoices" / "schemas"

sys.path.insert(0, str(ROOT))
from bench.rss import PeakRss  # noqa: E402
from stack import s3  # noqa: E402
from testkit.invoices import InvoicesProject, invoices_project  # noqa: E402
from zync import kafka_client  # noqa: E402
from zync.config import load_target  # noqa: E402
from zync.wire import Registry, encode  # noqa: E402


# ---------------------------------------------------------------------------
# The stream: one "round" per invoice, each event carrying a marker its output shows


@dataclass(frozen=True)
class Event:
    topic: str  # "Invoices" or "InvoiceStatus" (unprefixed)
    key: dict
    value: dict | None
    expect: tuple | None  # the output this event completes, matched by key and content


def invoice_round(n: int) -> list[Event]:
    """Invoice n: created with its status (one denorm output), its status and item updated, every 4th deleted."""
    status_id = 1_000_000_000 + n
    created = {"ID": n, "customer": f"customer-{n % 97}", "item": f"item-{n}"}
    status = {"ID": status_id, "InvoiceID": n, "status": f"new-{n}"}
    events = [
        Event("Invoices", {"ID": n}, {"before": None, "after": created, "op": "c"}, None),
        Event("InvoiceStatus", {"ID": status_id}, {"before": None, "after": status, "op": "c"}, ("denorm", n)),
        Event("InvoiceStatus", {"ID": status_id},
              {"before": status, "after": {**status, "status": f"paid-{n}"}, "op": "u"}, ("status", f"paid-{n}")),
        Event("Invoices", {"ID": n},
              {"before": created, "after": {**created, "item": f"item-{n}-b"}, "op": "u"}, ("item", f"item-{n}-b")),
    ]
    if n % 4 == 3:
        events.append(Event("Invoices", {"ID": n},
                            {"before": {**created, "item": f"item-{n}-b"}, "after": None, "op": "d"}, ("delete", n)))
    return events


def signature(key: Any, value: dict | None) -> tuple:
    """What an output record of NewInvoices says, in the terms of Event.expect."""
    if value is None:
        return ("delete", key["ID"])
    if value.get("customer") is not None and value.get("invoice_status") is not None:
        return ("denorm", value["ID"])
    if value.get("invoice_status") is not None:
        return ("status", value["invoice_status"])
    return ("item", value["item"])


class Producer:
    """Writes a project's events at a steady rate; remembers when each expected output's event was produced."""

    def __init__(self, target, project: InvoicesProject):
        registry = Registry(target.schema_registry)
        self.project = project
        self.producer = kafka_client.producer(target, **{"linger.ms": 5})
        self.writers = {}
        for topic in ("Invoices", "InvoiceStatus"):
            name = project.name(topic)
            kafka_client.ensure_topic(target, name)
            self.writers[topic] = tuple(
                registry.register(f"{name}-{side}", json.loads((SCHEMAS / f"{topic}-{side}.avsc").read_text()))
                for side in ("key", "value"))
        self.produced_at: dict[tuple, float] = {}
        self.events = 0

    def produce(self, event: Event) -> None:
        key_writer, value_writer = self.writers[event.topic]
        key = encode(key_writer, event.key)
        value = encode(value_writer, event.value) if event.value is not None else None
        while True:
            try:
                self.producer.produce(self.project.name(event.topic), key=key, value=value)
                break
            except BufferError:
                self.producer.poll(0.01)
        if event.expect is not None:
            self.produced_at[event.expect] = time.time()
        self.events += 1
        self.producer.poll(0)

    def run(self, first_invoice: int, rate: float, duration: float) -> None:
        """Produces rounds of invoices from first_invoice on, `rate` events per second, for `duration` seconds."""
        start, n = time.monotonic(), first_invoice
        sent = 0
        while time.monotonic() - start < duration:
            for event in invoice_round(n):
                due = start + sent / rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self.produce(event)
                sent += 1
            n += 1
        self.producer.flush(30)


class Consumer(threading.Thread):
    """Reads an output topic from the start and notes when each record arrived."""

    def __init__(self, target, topic: str):
        super().__init__(daemon=True)
        self.target, self.topic = target, topic
        self.arrived: dict[tuple, float] = {}
        self.duplicates = 0
        self._stopping = threading.Event()

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        registry = Registry(self.target.schema_registry)
        while not kafka_client.topic_exists(self.target, self.topic):  # egress creates it
            if self._stopping.wait(0.5):
                return
        consumer = kafka_client.consumer(self.target, group=f"bench-latency-{time.time()}")
        consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        try:
            while not self._stopping.is_set():
                msg = consumer.poll(0.05)
                if msg is None or msg.error():
                    continue
                now = time.time()
                _, key = registry.decode(msg.key(), "key")
                _, value = registry.decode(msg.value(), "value")
                sig = signature(key, value)
                if sig in self.arrived:
                    self.duplicates += 1
                else:
                    self.arrived[sig] = now
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join(10)


# ---------------------------------------------------------------------------
# The two designs


def zync(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "zync"), *args], cwd=cwd, env={**os.environ, "ZYNC_PROJECT_DIR": str(cwd)},
                          text=True, capture_output=True, **kwargs)


class ZyncRun:
    """One `zync run` process of a project, for the whole benchmark."""

    def __init__(self, project: InvoicesProject, log: Path, compiled: bool = False, env: dict[str, str] | None = None,
                 before: bool = False):
        self.out = log.open("w")
        # compiled: every run with Spark's generated code, as before small runs ran interpreted (service/run.py);
        # before: the output run's earlier design (bench/earlier_designs.py)
        settings = (["service.run.SMALL_RUN_ROWS = -1"] if compiled else []) + \
            (["import bench.earlier_designs", "bench.earlier_designs.restore_output_run()"] if before else [])
        command = ([str(BIN / "python"), "-c", "import sys, service.run; " + "; ".join(settings) + "; "
                    "from cli.main import main; sys.argv[0] = 'zync'; sys.exit(main())"] if settings
                   else [str(BIN / "zync")])
        self.process = subprocess.Popen(
            [*command, "run", "--interval", "1s", "--select", project.name("new_invoices")],
            cwd=project.path, env={**os.environ, "ZYNC_PROJECT_DIR": str(project.path), **(env or {})},
            stdout=self.out, stderr=subprocess.STDOUT)
        self.rss = PeakRss(self.process.pid)

    def stop(self) -> dict:
        self.process.terminate()
        code = self.process.wait(300)
        self.rss.stop()
        self.out.close()
        return {"exit_code": code, "peak_python_mb": self.rss.python_kb // 1024, "peak_jvm_mb": self.rss.jvm_kb // 1024}


class Chain(threading.Thread):
    """Today's chain of cold commands in a loop: from-kafka of each input, dbt run of the model, to-kafka."""

    def __init__(self, project: InvoicesProject):
        super().__init__(daemon=True)
        self.project = project
        self.cycles: list[float] = []
        self.failures: list[str] = []
        self._stopping = threading.Event()

    def cycle(self) -> None:
        p = self.project
        steps = [
            [str(BIN / "zync"), "from-kafka", "--topic", p.name(topic), "--table", p.name(table), "--exit-after", "1s"]
            for topic, table in (("Invoices", "raw_invoices"), ("InvoiceStatus", "raw_invoice_status"))
        ] + [
            [str(BIN / "dbt"), "run", "--select", p.name("new_invoices"), "--project-dir", str(p.path),
             "--profiles-dir", str(ROOT / "profiles")],
            [str(BIN / "zync"), "to-kafka", "--table", p.name("new_invoices")],
        ]
        for step in steps:
            done = subprocess.run(step, cwd=p.path, env={**os.environ, "ZYNC_PROJECT_DIR": str(p.path)},
                                  text=True, capture_output=True)
            if done.returncode != 0:
                self.failures.append(f"{' '.join(step[:3])}: {(done.stderr or done.stdout)[-400:]}")
                return

    def run(self) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            self.cycle()
            self.cycles.append(time.monotonic() - started)

    def stop(self) -> None:
        self._stopping.set()
        self.join()


# ---------------------------------------------------------------------------
# Measuring one rate


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(design: str, target, project: InvoicesProject, rate: float, duration: float, drain: float,
            first_invoice: int) -> dict:
    consumer = Consumer(target, project.output_topic)
    consumer.start()
    producer = Producer(target, project)
    skip = set(consumer.arrived)  # outputs of the warm-up, if any, are not this rate's
    print(f"  {design} at {rate:g} events/s for {duration:g} s ...", flush=True)
    producer.run(first_invoice, rate, duration)
    produced_for = dict(producer.produced_at)
    deadline = time.monotonic() + drain
    while time.monotonic() < deadline and not all(sig in consumer.arrived for sig in produced_for):
        time.sleep(0.5)
    consumer.stop()
    latencies = [(produced_for[sig], consumer.arrived[sig] - produced_for[sig])
                 for sig in produced_for if sig in consumer.arrived and sig not in skip]
    missing = [sig for sig in produced_for if sig not in consumer.arrived]
    by_time = [lat for _, lat in sorted(latencies)]
    quarter = max(1, len(by_time) // 4)
    first_q, last_q = by_time[:quarter], by_time[-quarter:]
    values = [lat for _, lat in latencies]
    result = {
        "design": design, "rate": rate, "duration_s": duration, "events": producer.events,
        "outputs_expected": len(produced_for), "outputs_seen": len(values), "missing": len(missing),
        "duplicates": consumer.duplicates,
    }
    if values:
        result.update({
            "p50_s": round(percentile(values, 0.5), 2), "p95_s": round(percentile(values, 0.95), 2),
            "p99_s": round(percentile(values, 0.99), 2), "max_s": round(max(values), 2),
            "first_quarter_p50_s": round(statistics.median(first_q), 2),
            "last_quarter_p50_s": round(statistics.median(last_q), 2),
        })
        result["bounded"] = not missing and result["last_quarter_p50_s"] <= 2 * result["first_quarter_p50_s"] + 10
    else:
        result["bounded"] = False
    return result


def warm_up(target, project: InvoicesProject, first_invoice: int, timeout: float, chain: Chain | None = None) -> float:
    """One round through a fresh pipeline (creates its tables and topics); how long it took."""
    consumer = Consumer(target, project.output_topic)
    consumer.start()
    producer = Producer(target, project)
    started = time.monotonic()
    for event in invoice_round(first_invoice):
        producer.produce(event)
    producer.producer.flush(30)
    while time.monotonic() - started < timeout and not all(s in consumer.arrived for s in producer.produced_at):
        time.sleep(0.5)
    consumer.stop()
    if not all(s in consumer.arrived for s in producer.produced_at):
        failures = f"; the chain's failures: {chain.failures[:2]}" if chain is not None and chain.failures else ""
        raise SystemExit(f"{project.output_topic}: the warm-up round did not reach {project.output_topic} "
                         f"within {timeout:g} s; see {STATE / 'logs'}{failures}")
    return time.monotonic() - started


def print_table(rows: list[dict]) -> None:
    head = ("design", "rate/s", "events", "outputs", "missing", "dup", "p50 s", "p95 s", "p99 s", "max s", "bounded")
    print("\n" + " | ".join(f"{h:>9}" for h in head))
    for r in rows:
        cells = (r["design"], f"{r['rate']:g}", r["events"], f"{r['outputs_seen']}/{r['outputs_expected']}",
                 r["missing"], r["duplicates"], r.get("p50_s", "-"), r.get("p95_s", "-"), r.get("p99_s", "-"),
                 r.get("max_s", "-"), "yes" if r["bounded"] else "NO")
        print(" | ".join(f"{c!s:>9}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="10,100,1000", help="events per second, comma-separated (default 10,100,1000)")
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of producing per rate and design")
    parser.add_argument("--drain", type=float, default=300.0, help="seconds to wait for the last outputs")
    parser.add_argument("--designs", default="zync-run,chain",
                        help="which designs to run (default zync-run,chain; also zync-run-compiled: a second "
                             "`zync run` whose small runs keep Spark's generated code, as before they ran interpreted; "
                             "zync-run-s3: a second `zync run` with its warehouse on the S3 server `zync up --s3` "
                             "starts, docs/object-storage.md; zync-run-before: a second `zync run` with the output "
                             "run's earlier design, bench/earlier_designs.py)")
    parser.add_argument("--keep", action="store_true", help="leave the benchmark's services running")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    designs = args.designs.split(",")

    shutil.rmtree(STATE, ignore_errors=True)
    (STATE / "logs").mkdir(parents=True)
    OUT.mkdir(parents=True, exist_ok=True)
    up = zync("up", *(["--s3"] if "zync-run-s3" in designs else []), cwd=ROOT)
    if up.returncode != 0:
        raise SystemExit(f"zync up failed:\n{up.stdout}{up.stderr}")
    rows: list[dict] = []
    run = None
    runs: list[ZyncRun] = []  # every zync run process; `run`: the first, whose peak memory is reported
    try:
        target = load_target(None)
        projects = {"zync-run": invoices_project(PROJECTS, "Run"), "chain": invoices_project(PROJECTS, "Chain"),
                    "zync-run-compiled": invoices_project(PROJECTS, "Compiled"),
                    "zync-run-s3": invoices_project(PROJECTS, "OnS3"),
                    "zync-run-before": invoices_project(PROJECTS, "Before")}
        # The S3 design's tables: the S3 server's warehouse, in a database of their own.
        on_s3 = {**s3.environment(), "ZYNC_SCHEMA": "zync_s3"}
        warm = {}
        for design in ("zync-run", "zync-run-compiled", "zync-run-s3", "zync-run-before"):
            if design in designs:
                runs.append(ZyncRun(projects[design], STATE / "logs" / f"{design}.log",
                                    compiled=design == "zync-run-compiled",
                                    env=on_s3 if design == "zync-run-s3" else None,
                                    before=design == "zync-run-before"))
                run = runs[0]
                warm[design] = warm_up(target, projects[design], 0, 600)
        if "chain" in designs:
            chain = Chain(projects["chain"])
            chain.start()
            warm["chain"] = warm_up(target, projects["chain"], 0, 900, chain)
            chain.stop()
        print(f"warm-up (first round through a fresh pipeline): {warm}", flush=True)
        first = 1
        for rate in rates:
            for design in designs:
                chain = None
                if design == "chain":
                    chain = Chain(projects["chain"])
                    chain.start()
                row = measure(design, target, projects[design], rate, args.duration, args.drain, first)
                if chain is not None:
                    chain.stop()
                    row["cycle_s"] = [round(c, 1) for c in chain.cycles]
                    row["failures"] = chain.failures[:3]
                print(f"    {row}", flush=True)
                rows.append(row)
            first += int(rate * args.duration) + 10
        memory = run.stop() if run is not None else {}
        for other in runs[1:]:
            other.stop()
        run = None
        runs = []
    finally:
        for other in runs:
            other.stop()
        if not args.keep:
            zync("down", cwd=ROOT)
    print_table(rows)
    print(f"zync run peak memory: {memory}")
    report = {"rates": rates, "duration_s": args.duration, "warm_up_s": warm, "rows": rows, "zync_run_memory": memory}
    (OUT / "latency.json").write_text(json.dumps(report, indent=2))
    print(f"JSON: {OUT / 'latency.json'}")


if __name__ == "__main__":
    main()
