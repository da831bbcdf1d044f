"""The PostgreSQL demo's steps and connectors, shared by run.sh (through the command line below) and
tests/debezium/test_end_to_end.py (which imports it, under names of its own): the SQL steps and how many
records each one leaves in the source topics, the denormalised state the sink's table must reach,
starting the Debezium source and the JDBC sink, waiting for a topic to hold N records, for the sink to
have applied the output topic or to hold the expected state, running SQL."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from stack import connect, postgres
from zync import kafka_client
from zync.config import Target, load_target
from zync.errors import ZyncError

SQL = Path(__file__).resolve().parent / "sql"
# The demo's steps: a SQL file run in the source database, and how many records each source table's
# topic holds once Debezium has streamed everything up to it (a delete adds its tombstone).
STEPS: list[tuple[str, dict[str, int]]] = [
    ("1-tables-and-snapshot.sql", {"invoices": 2, "invoice_status": 2}),
    ("2-new-invoices.sql", {"invoices": 4, "invoice_status": 3}),
    ("3-status-changes.sql", {"invoices": 4, "invoice_status": 5}),
    ("4-payments.sql", {"invoices": 4, "invoice_status": 8}),
    ("5-edit-and-delete.sql", {"invoices": 7, "invoice_status": 8}),
]


# What the sink's table must hold after a step, computed by PostgreSQL from the source tables (never from
# what zync wrote): the transform pairs each invoice with its status (an invoice without one waits), status
# and invoice updates follow as partial rows, a deleted invoice's row goes.
DENORMALISED = """
select i."ID" as id, i.customer, i.item, s.status as invoice_status
from invoices i join invoice_status s on s."InvoiceID" = i."ID"
order by 1
"""


@dataclass(frozen=True)
class Names:
    """What the demo's connectors and databases are called; a test gives them names of its own."""
    source: str = "demo-postgres-source"
    sink: str = "demo-postgres-sink"
    source_db: str = "demo_source"
    target_db: str = "demo_target"
    topic_prefix: str = "demo"
    # Debezium names topics <prefix>.<schema>.<table>; the demo's transforms read Invoices and InvoiceStatus.
    topics: dict[str, str] = field(default_factory=lambda: {"invoices": "Invoices", "invoice_status": "InvoiceStatus"})
    output_topic: str = "NewInvoices"
    target_table: str = "new_invoices"

    def counts(self, step: int) -> dict[str, int]:
        """{topic: records} once Debezium has streamed steps 0..step."""
        return {self.topics[table]: n for table, n in STEPS[step][1].items()}


DEMO = Names()


def start_connectors(target: Target, names: Names = DEMO) -> None:
    """The Debezium source (its tables' topics renamed to what the transforms read) and the JDBC sink
    (output topic -> target table), each running with its task."""
    client = connect.Connect()
    # RegexRouter (Kafka Connect's own transform) renames the topics to what the transforms read.
    routes: dict[str, str] = {}
    for i, (table, topic) in enumerate(names.topics.items()):
        routes |= {f"transforms.route{i}.type": "org.apache.kafka.connect.transforms.RegexRouter",
                   f"transforms.route{i}.regex": rf"{names.topic_prefix}\.public\.{table}",
                   f"transforms.route{i}.replacement": topic}
    routes["transforms"] = ",".join(f"route{i}" for i in range(len(names.topics)))
    client.run(names.source, connect.postgres_source(target, names.source, names.source_db,
                                                     [f"public.{t}" for t in names.topics],
                                                     names.topic_prefix, **routes))
    kafka_client.ensure_topic(target, names.output_topic)
    client.run(names.sink, connect.jdbc_sink(target, names.sink, [names.output_topic], names.target_db,
                                             **{"table.name.format": names.target_table}))


def wait_records(target: Target, counts: dict[str, int], timeout: float = 120, names: Names = DEMO) -> None:
    """Until each topic holds at least its count of records (the source connector must keep running)."""
    deadline = time.monotonic() + timeout
    for topic, n in counts.items():
        while True:
            count = sum(kafka_client.high_water_marks(target, topic).values()) \
                if kafka_client.topic_exists(target, topic) else 0
            if count >= n:
                break
            connect.Connect().check(names.source)
            if time.monotonic() > deadline:
                raise ZyncError(f"{topic} holds {count} records, not {n}, after {timeout:.0f}s")
            time.sleep(0.5)


def wait_sink(target: Target, timeout: float = 120, names: Names = DEMO) -> None:
    """Until the sink's consumer group has committed the output topic's end: everything is applied."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    admin = kafka_client.admin(target)
    topic = names.output_topic
    deadline = time.monotonic() + timeout
    while True:
        ends = kafka_client.high_water_marks(target, topic)
        request = [TopicPartition(topic, p) for p in ends]
        result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(f"connect-{names.sink}", request)])
        committed = {tp.partition: tp.offset for tp in list(result.values())[0].result().topic_partitions}
        if all(committed.get(p, -1) >= end for p, end in ends.items()):
            return
        connect.Connect().check(names.sink)
        if time.monotonic() > deadline:
            raise ZyncError(f"the sink has applied {topic} up to {committed}, not {ends}, after {timeout:.0f}s")
        time.sleep(0.5)


def target_rows(names: Names = DEMO) -> list[dict]:
    """The sink's table as the denormalised state's columns (empty while the sink has not created it)."""
    if not postgres.query(f"select 1 from pg_tables where tablename = '{names.target_table}'", names.target_db):
        return []
    return postgres.query(f"select id, customer, item, invoice_status from {names.target_table} order by 1",
                          names.target_db)


def wait_target(timeout: float = 300, names: Names = DEMO) -> None:
    """Until the sink's table equals the denormalised state of the source tables (for a `zync run` in the
    background, which publishes when it has drained)."""
    deadline = time.monotonic() + timeout
    while True:
        expected = postgres.query(DENORMALISED, names.source_db)
        actual = target_rows(names)
        if actual == expected:
            return
        connect.Connect().check(names.sink)
        if time.monotonic() > deadline:
            raise ZyncError(f"{names.target_db}.{names.target_table} holds {actual}, not {expected}, "
                            f"after {timeout:.0f}s (zync run's log says why)")
        time.sleep(0.5)


def sql(args: argparse.Namespace) -> None:
    with open(args.file) as f:
        text = f.read()
    if args.database == DEMO.source_db:
        postgres.ensure_database(DEMO.source_db)
    print(postgres.psql(text, args.database, quiet=False), end="")


def show(args: argparse.Namespace) -> None:
    """psql's aligned table output (psql() returns unaligned rows, fit for tests, not for reading)."""
    result = subprocess.run(
        [str(postgres.bin_dir() / "psql"), "-X", "-q", "-h", postgres.LOOPBACK, "-p", str(postgres.port()),
         "-U", postgres.USER, "-d", args.database, "-c", args.query],
        env={**os.environ, "PGPASSWORD": postgres.password()}, capture_output=True, text=True)
    if result.returncode != 0:
        raise ZyncError(f"psql on {args.database}: {result.stderr.strip()}")
    print(result.stdout, end="")


def main() -> int:
    top = argparse.ArgumentParser(description=__doc__)
    verbs = top.add_subparsers(dest="verb", required=True)
    verbs.add_parser("start", help="start both connectors").set_defaults(
        run=lambda args: start_connectors(load_target()))
    p = verbs.add_parser("wait-records", help="wait until the source topics hold what steps 1..STEP leave")
    p.add_argument("step", type=int, help="a step, from 1")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(run=lambda args: wait_records(load_target(), DEMO.counts(args.step - 1), args.timeout))
    p = verbs.add_parser("wait-sink", help="wait until the JDBC sink has applied all of NewInvoices")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(run=lambda args: wait_sink(load_target(), args.timeout))
    p = verbs.add_parser("wait-target", help="wait until new_invoices equals the source tables' denormalised state")
    p.add_argument("--timeout", type=float, default=300)
    p.set_defaults(run=lambda args: wait_target(args.timeout))
    verbs.add_parser("steps", help="print the steps' SQL files, one a line").set_defaults(
        run=lambda args: print("\n".join(str(SQL / file) for file, _ in STEPS)))
    p = verbs.add_parser("sql", help="run a SQL file in a database")
    p.add_argument("database")
    p.add_argument("file")
    p.set_defaults(run=sql)
    p = verbs.add_parser("show", help="print a query's result as a table")
    p.add_argument("database")
    p.add_argument("query")
    p.set_defaults(run=show)
    args = top.parse_args()
    try:
        args.run(args)
    except ZyncError as e:
        print(f"demo-postgres: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
