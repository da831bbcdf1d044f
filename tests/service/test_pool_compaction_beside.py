"""`zync run` compacts a raw pool beside its cycle, in Python: the ingest commits of the cycles meanwhile
land, the mirrors show every change once, and the compaction is counted as the cycle's own are."""

from __future__ import annotations

import io
import json

from service.run import Service
from tests.service import test_whole_database as whole_database
from tests.service.test_whole_database import cycles_until
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


def test_a_pool_is_compacted_beside_the_cycle_and_no_change_is_lost_or_doubled(target, spark, tmp_path):
    project = whole_database.database(target, spark, tmp_path / "db", MIRRORS, PREFIX)
    log = io.StringIO()
    with Service(target, root=project.path, status=Progress.for_run(stream=log, live=False),
                 compact_after=4) as service:
        service.discovery.every_s = 0
        cycles_until(service, lambda: spark.catalog.tableExists(f"{SCHEMA}.pcdb_orders"))
        expected = {1: "anna", 2: "bob"}
        started = False
        for n in range(3, 40):
            whole_database.produce(target, "customers", [("c", n, f"c{n}")], PREFIX)
            expected[n] = f"c{n}"
            service.cycle()
            started = started or POOL in service.compacting
            if started and POOL not in service.compacting:
                break  # its result was taken in by this cycle
            if POOL in service.compacting:
                service.compacting[POOL][1].result(timeout=120)  # ends before the next cycle looks
        assert started, "the pool's compaction never started"
        cycles_until(service, lambda: mirror(spark, "customers") == expected)
        history = spark.sql(f"describe history {POOL}").collect()
        assert "OPTIMIZE" in [h["operation"] for h in history]
        files = spark.sql(f"describe detail {POOL}").first()["numFiles"]
        writes = sum(1 for h in history if h["operation"] == "WRITE")
        assert files < writes
        lines = [json.loads(line) for line in log.getvalue().splitlines() if line.startswith("{")]
        compacted = [line for line in lines if line.get("stage") == "compact" and POOL in line.get("tables", {})]
        assert compacted and compacted[0]["tables"][POOL]["files_removed"] >= 2
        assert not [line for line in lines if "error" in line and line.get("of") == POOL]
        assert service.uncompacted[POOL][1] < 4
    offsets = sorted((r[0], r[1]) for r in spark.sql(f"select kafka.topic, kafka.offset from {POOL}").collect())
    assert offsets == sorted(set(offsets))
    assert mirror(spark, "orders") == {2: "bob"}
