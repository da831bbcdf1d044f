"""The `zync` command: zync's verbs over Kafka, the registry, Spark tables and dbt models.

Each verb imports the module that does its job when it runs: importing them
all would cost every command, `zync --help` included, about 3 s (measured:
ingest.from_kafka 1.1 s, egress.to_kafka 0.9 s, service.run 0.9 s, zync.topics
0.5 s, compiler 0.4 s, against 0.04 s for Python itself).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.init_project import DEFAULT_TOPICS
from service.compaction import COMPACT_AFTER_COMMITS
from service.dbt_stage import DBT_IN_CYCLE, DBT_PLACES
from service.folds import FOLD_AFTER_COMMITS, FOLD_AFTER_ROWS, FOLDS_PER_CYCLE, SETTLE_EVERY_S
from service.health import DEFAULT_STALE_AFTER_S
from service.http_server import DEFAULT_ADDRESS
from service.threads import DEFAULT_THREADS
from service.vacuum import DEFAULT_VACUUM_RETENTION_S
from zync.config import Target, load_target, project_dir
from zync.durations import parse_duration
from zync.errors import ZyncError


def _target(args: argparse.Namespace) -> Target:
    return load_target(args.target)


def cmd_up(args: argparse.Namespace) -> None:
    from stack import services  # the local stack: only these verbs need it

    for line in services.up(_target(args), connect=args.connect, cluster=args.cluster, object_store=args.s3,
                            metastore=args.metastore):
        print(line)
    if args.s3:
        from stack import s3

        print(f"to keep the warehouse on it: {s3.exports()}")


def cmd_down(args: argparse.Namespace) -> None:
    from stack import services  # the local stack: only these verbs need it

    for line in (services.purge if args.purge else services.down)(_target(args)):
        print(line)


def cmd_status(args: argparse.Namespace) -> None:
    from stack import services  # the local stack: only these verbs need it

    for line in services.status(_target(args), connect=args.connect, cluster=args.cluster, object_store=args.s3,
                                metastore=args.metastore):
        print(line)


def cmd_init(args: argparse.Namespace) -> None:
    from cli.init_project import init_project

    for line in init_project(args.folder, topics=args.topics):
        print(line)


def cmd_ls(args: argparse.Namespace) -> None:
    from zync import topics

    topics.write_lines(topics.ls(_target(args)))


def cmd_produce(args: argparse.Namespace) -> None:
    from zync import topics

    if args.file == "-":
        records = topics.read_json_lines(sys.stdin, "<stdin>")
    else:
        with open(args.file) as f:
            records = topics.read_json_lines(f, args.file)
    n = topics.produce(_target(args), args.topic, records, args.key_schema, args.value_schema,
                       partitions=args.partitions)
    print(f"produce: {n} records to {args.topic}", file=sys.stderr)


def cmd_consume(args: argparse.Namespace) -> None:
    from zync import topics

    records = topics.consume(_target(args), args.topic, from_beginning=args.from_beginning,
                             exit_after=args.exit_after, max_records=args.max,
                             partition=args.partition, offset=args.offset)
    topics.write_lines(topics.to_json_line(r) for r in records)


def cmd_from_kafka(args: argparse.Namespace) -> None:
    from zync.ingest_options import configured_pool

    # A topic the project keeps in a raw pool goes there, unless the command names a table of its own.
    pooled = {} if args.table or args.location else {t: p for t in args.topic if (p := configured_pool(t))}
    if pooled:
        _from_kafka_pooled(args, pooled)
        return
    from ingest.from_kafka import Ingest

    ingest = Ingest(_target(args), args.topic, table=args.table, shaper=args.shaper, batch_size=args.batch_size,
                    max_interval=args.max_interval, location=args.location,
                    reader=args.reader, errors_tolerance=args.errors_tolerance)
    if args.replay_dead_letters:
        _, still = ingest.replay_dead_letters()
        if still:
            raise ZyncError(f"{still} dead letters still cannot be taken (the log line `replay` shows the first "
                            "error); they stay in the dead-letter table")
        return
    ingest.run(exit_after=args.exit_after)


def _from_kafka_pooled(args: argparse.Namespace, pooled: dict) -> None:
    """from-kafka of topics the project keeps in raw pools (ingest/pool_from_kafka.py)."""
    names = ", ".join(sorted(pooled))
    others = [t for t in args.topic if t not in pooled]
    if others:
        raise ZyncError(f"topics {names} are kept in a raw pool (`pool:` in their mirror entry) and "
                        f"{', '.join(others)} in raw tables of their own: ingest them with a command each")
    refused = [flag for flag, given in (("--shaper", args.shaper), ("--replay-dead-letters", args.replay_dead_letters),
                                        ("--errors-tolerance all", args.errors_tolerance == "all")) if given]
    if refused:
        raise ZyncError(f"{' and '.join(refused)}: not for topics kept in a raw pool ({names}); a pooled topic stops "
                        "at a record it cannot take (no dead letters) and keeps its records as Debezium wrote them. "
                        "Take `pool:` off the mirror entry for a raw table of its own.")
    from ingest.from_kafka import ingest_progress
    from ingest.pool_from_kafka import ingest_pooled
    from zync.spark import spark_session

    target = _target(args)
    ingest_pooled(target, spark_session(target), pooled, ingest_progress(), exit_after=args.exit_after)


def cmd_to_kafka(args: argparse.Namespace) -> None:
    from egress.to_kafka import Egress

    Egress(_target(args), args.table, topic=args.topic, shaper=args.shaper,
           batch_size=args.batch_size).run(follow=args.follow)


def cmd_run(args: argparse.Namespace) -> None:
    from service.stop_signals import StopSignals

    # Before the engine starts: a stop signal during the start is a stop too (service/stop_signals.py).
    with StopSignals() as stop:
        from service.run import Service

        try:
            with Service(_target(args), select=args.select, interval=args.interval, threads=args.threads,
                         compact_after=args.compact_after, fold_after_commits=args.fold_after_commits,
                         fold_after_rows=args.fold_after_rows, folds_per_cycle=args.folds_per_cycle,
                         settle_every=args.settle_every,
                         # A scheduler's single cycle serves nothing unless asked to.
                         metrics=args.metrics if args.metrics or not args.once else "off",
                         stale_after=args.stale_after, vacuum_retention=args.vacuum_retention,
                         warm_up=args.warm_up, stopping=stop.requested, dbt=args.dbt) as service:
                code = service.run(once=args.once)
        except Exception as e:  # noqa: BLE001 - after a stop signal, whatever it cut short
            if not stop.requested.is_set():
                raise
            print(f"zync run: stopped by a signal; what was under way ended with: "
                  f"{(str(e) or type(e).__name__).splitlines()[0][:300]}",
                  file=sys.stderr)
            return
    if code:
        raise ZyncError("the cycle met errors (above); --once exits 1 so a scheduler retries it")


def cmd_etl_compile(args: argparse.Namespace) -> None:
    from compiler.project import compile_project

    compiled = compile_project(_target(args), project_dir(), [Path(f) for f in args.files])
    for note in compiled.notes:
        print(f"note: {note}", file=sys.stderr)
    for path in compiled.written:
        print(f"wrote {path}")
    print(f"etl compile: {len(compiled.sources)} transform files, {len(compiled.generated)} files generated, "
          f"{len(compiled.written)} changed", file=sys.stderr)


def cmd_etl_status(args: argparse.Namespace) -> None:
    from compiler import transform_files
    from service import etl_status

    root = project_dir()
    files = [Path(f) for f in args.files] or transform_files(root)
    if not files:
        raise ZyncError(f"no transform files given and none in {root / 'transforms'}")
    target = _target(args)
    print(etl_status.render(etl_status.collect(target, files, kafka=not args.no_kafka)), end="")
    failing = etl_status.render_failures(root, target.name)
    if failing:
        print("\n" + failing, end="")
    freshness = etl_status.render_freshness(root, target.name)
    if freshness:
        print("\n" + freshness, end="")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="zync",
        description="Move Debezium change streams Kafka -> Spark/Delta -> dbt -> Kafka, exactly once.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--target", default=None,
                        help="dbt target in profiles/ (default: $ZYNC_TARGET or 'local')")
    verbs = top.add_subparsers(dest="verb", metavar="COMMAND", required=True)

    def verb(name: str, handler, help_text: str) -> argparse.ArgumentParser:
        p = verbs.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.set_defaults(handler=handler)
        return p

    p = verb("up", cmd_up, "start the embedded Kafka broker, schema registry and catalog on loopback "
                           "(no-op if running)")
    p.add_argument("--connect", action="store_true",
                   help="also start PostgreSQL ($ZYNC_POSTGRES_PORT, default 15432) and a Kafka Connect worker "
                        "with Debezium ($ZYNC_CONNECT_PORT, default 18083); see docs/debezium.md")
    p.add_argument("--cluster", action="store_true",
                   help="also start a Spark cluster on this machine for target 'cluster': a standalone master "
                        "($ZYNC_SPARK_MASTER_PORT, default 17077), a worker and the Spark Thrift Server "
                        "($ZYNC_THRIFT_PORT, default 10000); see docs/scaling-out.md")
    p.add_argument("--s3", action="store_true",
                   help="also start an S3-compatible server (S3Proxy, $ZYNC_S3_PORT, default 19000) with bucket "
                        "'zync', and print the settings that keep the warehouse on it; see docs/object-storage.md")
    p.add_argument("--metastore", action="store_true",
                   help="also start PostgreSQL and the catalog as a service: Hive's metastore over Thrift "
                        "($ZYNC_METASTORE_PORT, default 19083), its database in PostgreSQL; Spark uses it when "
                        "ZYNC_METASTORE_URI=thrift://127.0.0.1:19083; see docs/configuration.md")
    p = verb("down", cmd_down, "stop the embedded services (Kafka, registry, catalog, and PostgreSQL, Connect, "
                               "the S3 server, the metastore service and the Spark cluster if running)")
    p.add_argument("--purge", action="store_true",
                   help="then delete the state folder ($ZYNC_STATE_DIR, default .local/state): topics, schemas, "
                        "tables and PostgreSQL's data, also where it lives outside it when zync runs as root")
    p = verb("status", cmd_status, "show the embedded Kafka broker, schema registry and catalog (and PostgreSQL, "
                                   "Connect and the Spark cluster)")
    p.add_argument("--connect", action="store_true",
                   help="list PostgreSQL and Connect even if they were never started here")
    p.add_argument("--cluster", action="store_true",
                   help="list the Spark cluster's master, worker and Thrift Server even if never started here")
    p.add_argument("--s3", action="store_true", help="list the S3-compatible server even if never started here")
    p.add_argument("--metastore", action="store_true",
                   help="list PostgreSQL and the metastore service even if they were never started here")
    p = verb("run", cmd_run, "the service: ingest every input topic, dbt run the models whose inputs moved, "
                             "publish new out rows; again and again in one warm engine (SIGTERM/Ctrl-C: "
                             "finish the step, exit 0)")
    p.add_argument("--select", metavar="SPEC",
                   help="dbt selection of the outputs and mirrors to keep moving (default: all of them), "
                        "e.g. 'new_invoices' or 'tag:billing'")
    p.add_argument("--interval", type=parse_duration, default=1.0, metavar="DUR",
                   help="longest wait between cycles when idle (default 1s); new messages start a cycle sooner")
    p.add_argument("--once", action="store_true",
                   help="one full cycle, then exit (for cron, Airflow and other schedulers)")
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS, metavar="N",
                   help=f"topics ingested at once in a cycle, each on a Spark session of its own "
                        f"(default {DEFAULT_THREADS}; 1: one after another)")
    p.add_argument("--compact-after", type=int, default=COMPACT_AFTER_COMMITS, metavar="N",
                   help=f"compact a raw, output or mirror table's small files (Delta OPTIMIZE, no row changed) "
                        f"once N commits (up to a quarter fewer, by table, so that tables do not all come due in "
                        f"one cycle) landed on it since its last compaction (default {COMPACT_AFTER_COMMITS}; "
                        "0: never); a few tables a cycle, the most commits behind first")
    p.add_argument("--fold-after-commits", type=int, default=FOLD_AFTER_COMMITS, metavar="N",
                   help="fold a mirror (MERGE the changes its view applies into its base table) once its raw "
                        f"table gained N commits since its last fold (default {FOLD_AFTER_COMMITS}); a mirror's "
                        "name shows every ingested change either way")
    p.add_argument("--fold-after-rows", type=int, default=FOLD_AFTER_ROWS, metavar="N",
                   help=f"...or N rows (default {FOLD_AFTER_ROWS}); a new raw schema folds at once")
    p.add_argument("--folds-per-cycle", type=int, default=FOLDS_PER_CYCLE, metavar="N",
                   help=f"fold at most N mirrors in one cycle (default {FOLDS_PER_CYCLE}; 0: no bound), and one "
                        "a cycle when growth alone is the reason; a mirror never built is built in the cycle that "
                        "finds it, past the bound; --once folds every mirror whose raw table moved")
    p.add_argument("--settle-every", type=parse_duration, default=SETTLE_EVERY_S, metavar="DUR",
                   help="settled cuts: fold the mirrors of a connector at its transaction cut (consistency: "
                        "transaction) together whenever one folds and at least every DUR, and record each cut their "
                        "bases all hold in <pool>__settled, for fast reads of every mirror at one transaction "
                        "(zync_settled_cut); off by default (0): a fold of all of them costs the cycle its time")
    p.add_argument("--dbt", choices=DBT_PLACES, default=DBT_IN_CYCLE,
                   help=f"where the dbt stage runs: {DBT_IN_CYCLE} (default), between ingest and egress; beside, on a "
                        "thread of its own, so that ingest (what a mirror shows) and egress go on while models "
                        "run and fold; --once runs it in the cycle")
    p.add_argument("--metrics", metavar="ADDR", default=None,
                   help=f"serve Prometheus metrics at http://ADDR/metrics and health at /healthz: HOST:PORT, PORT "
                        f"or HOST (default {DEFAULT_ADDRESS}; if that port is taken the run goes on without them); "
                        "'off': none")
    p.add_argument("--stale-after", type=parse_duration, default=DEFAULT_STALE_AFTER_S, metavar="DUR",
                   help=f"/healthz and systemd's watchdog report the run unhealthy once no cycle has ended for DUR "
                        f"(default {DEFAULT_STALE_AFTER_S / 60:.0f}m: longer than your longest cycle)")
    p.add_argument("--vacuum-retention", type=parse_duration, default=DEFAULT_VACUUM_RETENTION_S, metavar="DUR",
                   help="VACUUM each table it compacts once the files a compaction removed are DUR old, keeping "
                        f"time travel within DUR (default {DEFAULT_VACUUM_RETENTION_S / 86400:.0f}d, Delta's own)")
    p.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                   help="let the first changes pay for a new engine's first Delta write, MERGE and read "
                        "(by default a first cycle with nothing to read makes them on rows of its own in a "
                        "scratch folder, then the run says it is ready)")
    verb("ls", cmd_ls, "list registry subjects with their versions and schema ids")
    p = verb("init", cmd_init, "make a project of your own in FOLDER (new or empty): dbt project, profile, "
                               "profiles/zync.yml for your Kafka and registry, transforms/ mirroring every table")
    p.add_argument("folder", type=Path, metavar="FOLDER")
    p.add_argument("--topics", metavar="REGEX", default=DEFAULT_TOPICS,
                   help="the topics transforms/mirrors.yml mirrors (default: every Debezium table topic, "
                        "<prefix>.<schema>.<table>)")

    p = verb("produce", cmd_produce,
             'produce JSON lines {"key": ..., "value": ...} to a topic as Avro (Confluent wire format)')
    p.add_argument("--topic", required=True, help="topic (created if missing)")
    p.add_argument("--key-schema", type=Path, help="Avro schema (.avsc) of the keys; inferred if omitted")
    p.add_argument("--value-schema", type=Path, help="Avro schema (.avsc) of the values; inferred if omitted")
    p.add_argument("--partitions", type=int, default=1,
                   help="partitions of the topic if produce creates it (default 1)")
    p.add_argument("file", metavar="FILE|-", help="JSON lines file, or - for standard input")

    p = verb("consume", cmd_consume, "print a topic's records as JSON lines, decoded with their writer schemas")
    p.add_argument("--topic", required=True)
    p.add_argument("--from-beginning", action="store_true", help="start at the earliest offset (default: new records)")
    p.add_argument("--exit-after", type=parse_duration, metavar="DUR",
                   help="stop after DUR with no new records (e.g. 1s, 500ms)")
    p.add_argument("--max", type=int, metavar="N", help="stop after N records")
    p.add_argument("--partition", type=int, help="read only this partition")
    p.add_argument("--offset", type=int, help="start at this offset (with --partition)")

    p = verb("from-kafka", cmd_from_kafka, "ingest topics into raw Delta tables; resumes from the tables' offsets")
    p.add_argument("--topic", required=True, action="append", help="topic to ingest (repeat for several)")
    p.add_argument("--table", help="table name for a single topic (default: raw_<topic in snake case>)")
    p.add_argument("--shaper", type=Path, metavar="F.sql",
                   help="Spark SQL SELECT over the view `batch`, applied before writing; must keep `kafka`")
    p.add_argument("--location", metavar="PATH",
                   help="keep the table at this Delta path instead of the catalog (a single topic)")
    p.add_argument("--exit-after", type=parse_duration, metavar="DUR",
                   help="stop after DUR with no new messages (default: run until interrupted)")
    p.add_argument("--batch-size", type=int,  # ingest.from_kafka.DEFAULT_BATCH_SIZE (not imported: it loads pyspark)
                   help="records per Delta commit at most (default 1000000 with --reader spark, whose memory "
                        "does not grow with it; 250000 with --reader python, which holds two batches)")
    p.add_argument("--max-interval", type=parse_duration, default=5.0, metavar="DUR",
                   help="commit what was read at least this often (default 5s)")
    p.add_argument("--reader", choices=["spark", "python"], default="spark",
                   help="who reads Kafka: Spark's Kafka source, batch by batch (default, faster), or "
                        "the Python consumer (confluent-kafka), message by message; Spark's from_avro decodes either way")
    p.add_argument("--errors-tolerance", choices=["none", "all"],
                   help="a message ingest cannot take (not Avro, unknown schema id, undecodable, an incompatible "
                        "schema): none stops at it, everything before it committed; all puts it in the table "
                        "<raw table>__dead_letters (bytes, headers, coordinates, error) and goes on. Default: "
                        "the topic's `errors.tolerance` in the project's transform files, else none")
    p.add_argument("--replay-dead-letters", action="store_true",
                   help="instead of ingesting: take the dead letters that now decode (e.g. after registering "
                        "their schema) into the raw table at their own offsets and remove them, exactly once; "
                        "run it with the topic's ingest stopped and before the ETL's cursor passes them "
                        "(docs/reference/ingest.md: Bad messages)")

    p = verb("to-kafka", cmd_to_kafka, "publish an output table's out rows to their topic, offsets aligned")
    p.add_argument("--table", required=True, help="output table (a dbt model, e.g. new_invoices)")
    p.add_argument("--topic", help="output topic (default: the one in the table)")
    p.add_argument("--shaper", type=Path, metavar="F.sql", help="Spark SQL SELECT over the view `batch`")
    p.add_argument("--follow", action="store_true",
                   help="keep running and publish new commits as they land (stop with Ctrl-C)")
    p.add_argument("--batch-size", type=int, default=100_000,
                   help="rows encoded and pulled from Spark at a time; bounds memory (default 100000)")

    etl = verbs.add_parser("etl", help="compile transform YAML into dbt models",
                           description="compile transform YAML into dbt models")
    etl_verbs = etl.add_subparsers(dest="etl_verb", metavar="COMMAND", required=True)
    p = etl_verbs.add_parser("compile", parents=[common],
                             help="transform YAML -> dbt models, properties and sources (all or nothing)",
                             description="transform YAML -> dbt models, properties and sources (all or nothing)")
    p.add_argument("files", nargs="*", metavar="FILE.yml", help="transform files (default: transforms/*.yml and demo/*/transforms/*.yml)")
    p.set_defaults(handler=cmd_etl_compile)
    p = etl_verbs.add_parser("status", parents=[common],
                             help="per input: cursor, pending, expired, lag; per output: last offset vs Kafka",
                             description="per input topic/partition of each transform: cursor, latest offset, "
                                         "pending and expired records, age of the oldest pending; per output: "
                                         "last output offset and how far its Kafka topic is behind")
    p.add_argument("files", nargs="*", metavar="FILE.yml", help="transform files (default: transforms/*.yml and demo/*/transforms/*.yml)")
    p.add_argument("--no-kafka", action="store_true", help="do not ask Kafka for the output topics' offsets")
    p.set_defaults(handler=cmd_etl_status)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.handler(args)
    except ZyncError as e:
        print(f"zync {args.verb}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"zync {args.verb}: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
