"""What `zync run` measured itself for a demo step, printed by the demos after each step.

Each model's freshness as the run writes it for `zync etl status` (service/freshness.py): from a
change's source commit (Debezium's `source.ts_ms`; without one, its produce to Kafka) to applied (a
mirror: queryable by its name; an output: published to its topic). The demo's own wall time, when
it shows one, also counts how often its checker looks and how long the check takes.

Usage: python demo/freshness.py --since EPOCH_SECONDS [--model NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from service.freshness import freshness_file, read_freshness
from zync.config import load_target, project_dir
from zync.errors import ZyncError

# The run rewrites the file after each cycle with work and every few seconds otherwise.
WAIT_S = 30.0


def applied_since(found: dict | None, since: float, models: list[str]) -> dict[str, float]:
    """The newest-change freshness (seconds) of each model (of `models`, if any) applied at or after `since`."""
    figures = {}
    for model, figure in ((found or {}).get("models") or {}).items():
        if models and model not in models:
            continue
        if (figure.get("applied_at") or 0) >= since and figure.get("newest_seconds") is not None:
            figures[model] = figure["newest_seconds"]
    return figures


def sentence(figures: dict[str, float]) -> str:
    what = ("from its source commit (its produce to Kafka where it carries none) to applied (a mirror: "
            "queryable; an output: published)")
    if not figures:
        return "zync run's own measure: none yet (no change of this step applied in its last report)"
    if len(figures) <= 3:
        each = ", ".join(f"{model} {seconds:.1f}s" for model, seconds in sorted(figures.items()))
        return f"zync run's own measure, the newest change of each model {what}: {each}"
    values = sorted(figures.values())
    return (f"zync run's own measure, the newest change of each of {len(values)} models {what}: "
            f"median {statistics.median(values):.1f}s, max {values[-1]:.1f}s")


def report(since: float, models: list[str], root: Path, target_name: str, wait_s: float = WAIT_S) -> str:
    """The sentence, once the run's file was written after now (so it holds this step's applies)."""
    path, asked = freshness_file(root, target_name), time.time()
    deadline = asked + wait_s
    while True:
        found = read_freshness(path)
        fresh = found is not None and found.get("as_of", 0) >= asked
        figures = applied_since(found, since, models)
        if (fresh and (not models or set(models) <= set(figures))) or time.time() > deadline:
            return sentence(figures)
        time.sleep(0.5)


def main() -> None:
    top = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    top.add_argument("--since", type=float, required=True, help="the step's start (epoch seconds)")
    top.add_argument("--model", action="append", default=[], help="only these models (default: every one "
                                                                    "applied since then)")
    args = top.parse_args()
    print(report(args.since, args.model, project_dir(), load_target().name))


if __name__ == "__main__":
    try:
        main()
    except ZyncError as e:  # a project or target the demo cannot read: exit 1 saying why
        sys.exit(f"demo: {e}")
