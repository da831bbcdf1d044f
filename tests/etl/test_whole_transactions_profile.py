"""The output model's run time on test_whole_transactions' scenario, then rounds of more transactions: what ordering
whole source transactions costs a run (`-m campaign -s`; prints the figures).

    .venv/bin/pytest -m campaign -s tests/etl/test_whole_transactions_profile.py
"""

from __future__ import annotations

import io
import statistics

import pytest

from service.run import Service
from testkit.invoices import ROOT
from testkit.scratch import make_scratch_project
from tests.etl.test_whole_transactions import OUTPUT, TRANSFORM, Source, published
from tests.ingest.conftest import Producer
from zync.progress import Progress

ROUNDS = 10


@pytest.mark.campaign
def test_profile_the_output_model_over_whole_transactions(target, spark, tmp_path):
    project = make_scratch_project(tmp_path / "tx", {"tx.yml": TRANSFORM}, spark=spark)
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    source = Source(Producer(target))
    source.boundary("BEGIN", 1)
    for order, invoice in enumerate((1, 10, 11, 12), start=1):
        source.change(1, order, "invoices", "c", {"id": invoice, "customer": f"c{invoice}"})
    source.change(1, 5, "statuses", "c", {"id": 1, "invoice_id": 1, "status": "open"})
    source.boundary("END", 1, {"public.invoices": 4, "public.statuses": 1})
    seconds: list[float] = []
    with Service(target, root=project.path, status=Progress.for_run(stream=io.StringIO(), live=False)) as service:
        service.discovery.every_s = 0
        run = service.project.run

        def timed(*args, **kwargs):
            runs = run(*args, **kwargs)
            seconds.extend(r.seconds for r in runs if r.name == OUTPUT and r.ok)
            return runs

        service.project.run = timed
        expected = 0
        for n in range(ROUNDS + 1):
            if n:  # a transaction over both tables (a new invoice paired with its status), then a status update
                xid = 2 * n
                invoice = 100 + n
                source.boundary("BEGIN", xid)
                source.change(xid, 1, "invoices", "c", {"id": invoice, "customer": f"c{invoice}"})
                source.change(xid, 2, "statuses", "c", {"id": invoice, "invoice_id": invoice, "status": "open"})
                source.boundary("END", xid, {"public.invoices": 1, "public.statuses": 1})
                source.boundary("BEGIN", xid + 1)
                source.change(xid + 1, 1, "statuses", "u", {"id": invoice, "invoice_id": invoice, "status": "paid"})
                source.boundary("END", xid + 1, {"public.statuses": 1})
            expected = 1 + 2 * n
            for _ in range(4):
                service.cycle()
                if len(published(target)) >= expected:
                    break
    assert len(published(target)) == expected
    first, rest = seconds[0], seconds[1:]
    print(f"\nwhole-transaction output model runs: {len(seconds)}; first {first:.2f} s; then p50 "
          f"{statistics.median(rest):.2f} s, min {min(rest):.2f} s, max {max(rest):.2f} s, mean "
          f"{statistics.mean(rest):.2f} s; all: {' '.join(f'{s:.2f}' for s in seconds)}")
