"""`dbt parse` of the committed project: topic -> raw table -> model -> topic, as dbt docs draws it."""

from __future__ import annotations

import json

import pytest

from tests.dbt_native.conftest import ROOT


@pytest.fixture(scope="module")
def manifest(dbt_at, tmp_path_factory):
    target = tmp_path_factory.mktemp("dbtn_parse") / "target"
    dbt_at(ROOT, "parse", "--target-path", str(target))
    return json.loads((target / "manifest.json").read_text())


def test_manifest_shows_the_invoices_lineage_from_topics_to_topic(manifest):

    sources = manifest["sources"]
    raw_invoices = sources["source.zync.raw.raw_invoices"]
    assert raw_invoices["meta"]["zync_topic"] == "Invoices"
    assert sources["source.zync.raw.raw_invoice_status"]["meta"]["zync_topic"] == "InvoiceStatus"
    assert raw_invoices["description"] and {c for c in raw_invoices["columns"]} == {"kafka", "key", "value"}

    model = manifest["nodes"]["model.zync.new_invoices"]
    assert set(model["depends_on"]["nodes"]) == {"source.zync.raw.raw_invoices", "source.zync.raw.raw_invoice_status"}
    documented = {name for name, column in model["columns"].items() if column["description"]}
    assert {"kafka", "kind", "key", "value", "fields", "status", "run_id"} <= documented

    exposures = [e for e in manifest["exposures"].values() if e["meta"].get("zync_output_topic") == "NewInvoices"]
    assert len(exposures) == 1
    assert exposures[0]["depends_on"]["nodes"] == ["model.zync.new_invoices"]
    assert "NewInvoices" in exposures[0]["label"]


def test_every_output_model_carries_the_zync_data_tests(manifest):
    tests = [n for n in manifest["nodes"].values()
             if n["resource_type"] == "test" and n.get("attached_node") == "model.zync.new_invoices"]
    by_macro = {t["test_metadata"]["name"]: t for t in tests}
    assert set(by_macro) >= {"zync_one_done_row_per_input_record", "zync_contiguous_output_offsets",
                             "zync_done_rows_have_input", "zync_pending_age"}
    assert by_macro["zync_pending_age"]["config"]["severity"].lower() == "warn"
    # The checks that compare with the input read the raw tables: they are in the lineage too.
    assert "source.zync.raw.raw_invoices" in by_macro["zync_done_rows_have_input"]["depends_on"]["nodes"]
