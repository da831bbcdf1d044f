"""The `zync etl status` sample in the dbt workflow page is what the status prints for its figures.

Rendered by service/etl_status.py's own `render`, so a column added to the status (as the dead
letters were) fails here until the page shows it.
"""
from pathlib import Path

from service.etl_status import InputStatus, OutputStatus, PartitionStatus, TransformStatus, render

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "dbt-workflow.md"


def test_the_pages_status_sample_is_what_zync_etl_status_prints():
    # The figures the page explains below its sample.
    status = TransformStatus(
        Path("demo/invoices/transforms/invoices.yml"),
        OutputStatus("NewInvoices", "new_invoices", last_offset=2, kafka_next_offset=2),
        [InputStatus("Invoices", "raw_invoices", None, [PartitionStatus(0, 3, 3, 1, 0, 3 * 3600 + 60)]),
         InputStatus("InvoiceStatus", "raw_invoice_status", None, [PartitionStatus(0, 3, 2, 0, 0, None)])])
    printed = render([status])
    assert "dead letters" in printed
    assert printed in PAGE.read_text(), f"{PAGE.relative_to(ROOT)} shows another `zync etl status`:\n{printed}"
