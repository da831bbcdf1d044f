"""The demos' report of what `zync run` measured itself (demo/freshness.py), read from the file the run
writes (service/freshness.py's own writer here, as the run's)."""

import importlib.util
import time
from pathlib import Path

from service.freshness import freshness_file, write_freshness

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("demo_freshness", ROOT / "demo" / "freshness.py")
demo_freshness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(demo_freshness)


def test_a_step_reports_the_models_it_applied_with_the_runs_own_figures(tmp_path):
    step = time.time() - 10
    write_freshness(freshness_file(tmp_path, "local"), {
        "new_invoices": {"kind": "output", "newest_seconds": 3.24, "applied_at": step + 4, "behind_seconds": 0},
        "invoices_mirror": {"kind": "mirror", "newest_seconds": 0.8, "applied_at": step + 2, "behind_seconds": 0},
        # Applied by an earlier step: not this one's.
        "payments_mirror": {"kind": "mirror", "newest_seconds": 9.0, "applied_at": step - 60, "behind_seconds": 0},
    })
    printed = demo_freshness.report(step, [], tmp_path, "local", wait_s=0)
    assert "invoices_mirror 0.8s, new_invoices 3.2s" in printed and "payments_mirror" not in printed
    assert demo_freshness.report(step, ["new_invoices"], tmp_path, "local", wait_s=0).endswith(": new_invoices 3.2s")


def test_many_models_read_as_their_median_and_max(tmp_path):
    step = time.time() - 10
    write_freshness(freshness_file(tmp_path, "local"), {
        f"t{i}": {"kind": "mirror", "newest_seconds": float(i), "applied_at": step + 1, "behind_seconds": 0}
        for i in range(1, 21)})
    assert demo_freshness.report(step, [], tmp_path, "local", wait_s=0).endswith(
        "each of 20 models from its source commit (its produce to Kafka where it carries none) to applied "
        "(a mirror: queryable; an output: published): median 10.5s, max 20.0s")


def test_a_report_written_before_the_step_ended_is_waited_for_then_said_to_lack_it(tmp_path):
    step = time.time()
    write_freshness(freshness_file(tmp_path, "local"), {
        "new_invoices": {"kind": "output", "newest_seconds": 2.0, "applied_at": step - 30, "behind_seconds": 0}})
    started = time.monotonic()
    printed = demo_freshness.report(step, ["new_invoices"], tmp_path, "local", wait_s=1.0)
    assert time.monotonic() - started >= 1.0 and "none yet" in printed
