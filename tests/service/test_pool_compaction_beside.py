"""`zync run` compacts and checkpoints a raw pool beside its cycle, the compaction in Python: the ingest
commits of the cycles meanwhile land, the mirrors show every change once, and the compaction is counted
as the cycle's own are."""

from __future__ import annotations

import io
import json

import service.run as run_module
from ingest.pool import BESIDE_CHECKPOINT_INTERVAL
from service.run import Service
from tests.service import test_whole_database as whole_database
from tests.service.test_whole_database import cycles_until
from zync import storage
from zync.progress import Progress

SCHEMA = "zync"
PREFIX = "pcdb.public."
POOL = f"{SCHEMA}.raw_pcdb"
MIRRORS = r"""
mirrors:
  - topics: 'pcdb\.public\.(customers|orders)'
    name: 'pcdb_{table}'
    pool: raw_pcdb
"""


def mirror(spark, table: str) -> dict[int, str]:
    return whole_database.mirror(spark, table, name_prefix="pcdb_")


def test_a_pool_is_compacted_and_checkpointed_beside_the_cycle_and_no_change_is_lost_or_doubled(
        target, spark, tmp_path, monkeypatch):
    monkeypatch.setattr(run_module, "RAW_CHECKPOINT_INTERVAL", 6)  # a checkpoint beside every 6 commits
    project = whole_database.database(target, spark, tmp_path / "db", MIRRORS, PREFIX)
    log = io.StringIO()
    with Service(target, root=project.path, status=Progress.for_run(stream=log, live=False),
                 compact_after=4) as service:
        service.discovery.every_s = 0
        cycles_until(service, lambda: spark.catalog.tableExists(f"{SCHEMA}.pcdb_orders"))
        folder = storage.location(service.versions.location(POOL)).local_path / "_delta_log"
        expected = {1: "anna", 2: "bob"}
        for n in range(3, 40):
            whole_database.produce(target, "customers", [("c", n, f"c{n}")], PREFIX)
            expected[n] = f"c{n}"
            service.cycle()
            if POOL in service.compacting:
                service.compacting[POOL][1].result(timeout=120)  # ends before the next cycle looks
            operations = [h["operation"] for h in spark.sql(f"describe history {POOL}").collect()]
            if "OPTIMIZE" in operations and list(folder.glob("*.checkpoint.parquet")) \
                    and POOL not in service.compacting:
                break
        else:
            raise AssertionError("the pool was not compacted and checkpointed beside the cycle")
        cycles_until(service, lambda: mirror(spark, "customers") == expected)
        detail = spark.sql(f"describe detail {POOL}").first()
        writes = operations.count("WRITE")
        assert detail["numFiles"] < writes
        # Delta itself checkpoints the pool seldom: the checkpoints are the run's, beside the cycle.
        assert detail["properties"]["delta.checkpointInterval"] == str(BESIDE_CHECKPOINT_INTERVAL)
        lines = [json.loads(line) for line in log.getvalue().splitlines() if line.startswith("{")]
        upkeep = [line["tables"][POOL] for line in lines if line.get("stage") == "compact"
                  and POOL in line.get("tables", {})]
        assert any(u.get("files_removed", 0) >= 2 for u in upkeep) and any("checkpoint_s" in u for u in upkeep)
        assert not [line for line in lines if "error" in line and line.get("of") == POOL]
    offsets = sorted((r[0], r[1]) for r in spark.sql(f"select kafka.topic, kafka.offset from {POOL}").collect())
    assert offsets == sorted(set(offsets))
    assert mirror(spark, "orders") == {2: "bob"}
