"""What the files a long-running `zync run` accumulates cost a cycle, measured in-process.

    .venv/bin/python bench/file_growth.py [--files 3000] [--kinds cursor,done] [--cycles 4] [--compact]

Every writing run of an output model appends one small file to each of its
`kind` partitions until `zync run` compacts the table (docs/running.md,
Compaction). This builds the invoices project (bench/latency.py's stream
shape) on its own state folder and ports, runs --cycles cycles of 4 events
in one warm `Service`, then appends copies of the table's own rows as
--files small files to each of --kinds (copies of cursor rows leave every
cursor where it was; copies of done rows sit below the cursors, where no run
reads them as pending; out rows are not copied: egress rightly refuses a
table holding two out rows at one offset as damaged), and runs --cycles
more: each cycle's stages and seconds are printed before and after. With
--compact, the service's compaction stage (service/compaction.py) then runs
once on every table and --cycles more follow it.
Alone on the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.latency import Producer, invoice_round  # noqa: E402  (it sets the latency benchmark's ports: ours below)
from bench.service_cycles import full_cycle, invoices_service  # noqa: E402
from testkit.invoices import invoices_project  # noqa: E402

STATE = ROOT / ".local" / "bench-file-growth-state"
PORTS = {"ZYNC_KAFKA_PORT": "24492", "ZYNC_REGISTRY_PORT": "24481", "ZYNC_CATALOG_PORT": "24827"}
os.environ.update({**PORTS, "ZYNC_STATE_DIR": str(STATE), "ZYNC_TARGET": "local"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=3000, help="small files added to each kind (default 3000)")
    parser.add_argument("--kinds", default="cursor,done",
                        help="the output table's partitions to add them to: cursor, done (default both)")
    parser.add_argument("--cycles", type=int, default=4, help="cycles before and after (default 4)")
    parser.add_argument("--compact", action="store_true",
                        help="then compact every table once (zync run's compaction stage) and run --cycles more")
    args = parser.parse_args()
    if not set(args.kinds.split(",")) <= {"cursor", "done"}:
        parser.error("--kinds takes cursor and/or done (copies of out rows are refused by egress as damage)")

    from stack import services
    from zync.config import load_target
    from zync.spark import spark_session

    target = load_target("local")
    services.down(target)
    shutil.rmtree(STATE, ignore_errors=True)
    services.up(target)
    try:
        project = invoices_project(STATE / "projects", "Files")
        os.environ["ZYNC_PROJECT_DIR"] = str(project.path)
        os.chdir(project.path)
        spark = spark_session(target)
        producer = Producer(target, project)
        output = f"zync.{project.name('new_invoices')}"
        with invoices_service(target, project) as service:
            phases = 3 if args.compact else 2
            for n in range(phases * args.cycles):
                for event in invoice_round(n):
                    producer.produce(event)
                producer.producer.flush(30)
                started = time.perf_counter()
                reports = full_cycle(service)
                phase = ("before", "after", "compacted")[n // args.cycles]
                print(f"cycle {n} ({phase}): {time.perf_counter() - started:.2f} s; "
                      + ", ".join(f"{r.stage} {r.seconds:.2f}s" for r in reports), flush=True)
                if n == args.cycles - 1:
                    started = time.perf_counter()
                    for kind in args.kinds.split(","):
                        rows = spark.table(output).where(f"kind = '{kind}'").limit(3)
                        copies = rows.crossJoin(spark.range(args.files).withColumnRenamed("id", "copy"))
                        copies.repartition(args.files, "copy").drop("copy").write.insertInto(output)
                    files = spark.sql(f"describe detail {output}").first()["numFiles"]
                    print(f"the output table now has {files} files ({time.perf_counter() - started:.0f} s to add them)",
                          flush=True)
                if args.compact and n == 2 * args.cycles - 1:
                    default, service.compact_after = service.compact_after, 1  # every table with a new commit
                    started = time.perf_counter()
                    report = service.compact()
                    service.compact_after = default
                    files = spark.sql(f"describe detail {output}").first()["numFiles"]
                    print(f"compaction: {time.perf_counter() - started:.2f} s, "
                          f"{report.detail['tables'] if report else 'nothing to do'}; the output table now has {files} files",
                          flush=True)
    finally:
        services.down(target)


if __name__ == "__main__":
    main()
