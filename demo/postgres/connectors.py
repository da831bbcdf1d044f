"""The PostgreSQL demo's connector steps (called by run.sh): start the Debezium source and the JDBC sink,
wait for a topic to hold N records, wait for the sink to have applied its topic, run SQL."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from zync import connect, kafka_client, postgres
from zync.config import load_target
from zync.errors import ZyncError

SOURCE = "demo-postgres-source"
SINK = "demo-postgres-sink"
SOURCE_DB = "demo_source"
TARGET_DB = "demo_target"
# Debezium names topics <prefix>.<schema>.<table>; the demo's transforms read Invoices and InvoiceStatus.
ROUTES = {"invoices": "Invoices", "invoice_status": "InvoiceStatus"}


def start(args: argparse.Namespace) -> None:
    target = load_target()
    client = connect.Connect()
    # RegexRouter (Kafka Connect's own transform) renames the topics to what the transforms read.
    routes: dict[str, str] = {}
    for i, (table, topic) in enumerate(ROUTES.items()):
        routes |= {f"transforms.route{i}.type": "org.apache.kafka.connect.transforms.RegexRouter",
                   f"transforms.route{i}.regex": rf"demo\.public\.{table}",
                   f"transforms.route{i}.replacement": topic}
    routes["transforms"] = ",".join(f"route{i}" for i in range(len(ROUTES)))
    client.run(SOURCE, connect.postgres_source(target, SOURCE, SOURCE_DB, [f"public.{t}" for t in ROUTES],
                                               "demo", **routes))
    kafka_client.ensure_topic(target, "NewInvoices")
    client.run(SINK, connect.jdbc_sink(target, SINK, ["NewInvoices"], TARGET_DB,
                                       **{"table.name.format": "new_invoices"}))
    print(f"connectors {SOURCE} and {SINK} running", file=sys.stderr)


def wait_records(args: argparse.Namespace) -> None:
    target = load_target()
    deadline = time.monotonic() + args.timeout
    for spec in args.topic_counts:
        topic, _, n = spec.partition("=")
        while True:
            count = sum(kafka_client.high_water_marks(target, topic).values()) \
                if kafka_client.topic_exists(target, topic) else 0
            if count >= int(n):
                break
            connect.Connect().check(SOURCE)
            if time.monotonic() > deadline:
                raise ZyncError(f"{topic} holds {count} records, not {n}, after {args.timeout:.0f}s")
            time.sleep(0.5)


def wait_sink(args: argparse.Namespace) -> None:
    """Until the sink's consumer group has committed the topic's end: everything is applied."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    target = load_target()
    admin = kafka_client.admin(target)
    deadline = time.monotonic() + args.timeout
    while True:
        ends = kafka_client.high_water_marks(target, "NewInvoices")
        request = [TopicPartition("NewInvoices", p) for p in ends]
        result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(f"connect-{SINK}", request)])
        committed = {tp.partition: tp.offset for tp in list(result.values())[0].result().topic_partitions}
        if all(committed.get(p, -1) >= end for p, end in ends.items()):
            return
        connect.Connect().check(SINK)
        if time.monotonic() > deadline:
            raise ZyncError(f"the sink has applied NewInvoices up to {committed}, not {ends}, "
                            f"after {args.timeout:.0f}s")
        time.sleep(0.5)


def sql(args: argparse.Namespace) -> None:
    with open(args.file) as f:
        text = f.read()
    if args.database == SOURCE_DB:
        postgres.ensure_database(SOURCE_DB)
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
    verbs.add_parser("start", help="create the target database and start both connectors").set_defaults(run=start)
    p = verbs.add_parser("wait-records", help="wait until each TOPIC holds N records")
    p.add_argument("topic_counts", nargs="+", metavar="TOPIC=N")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(run=wait_records)
    p = verbs.add_parser("wait-sink", help="wait until the JDBC sink has applied all of NewInvoices")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(run=wait_sink)
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
