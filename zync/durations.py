"""Durations, one grammar for the command line and the transform YAML: 500ms, 90s, 30m, 12h, 7d.

On the command line (--exit-after, --interval, --max-interval) a plain number
is seconds; in YAML (`expire-after`) a plain number means offsets, so there
the unit is required (`unit_required=True`).
"""

from __future__ import annotations

import argparse
import re

UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
EXAMPLES = "500ms, 90s, 30m, 12h, 7d"
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*")


def seconds(text: str, unit_required: bool = False) -> float | None:
    """The duration `text` in seconds, or None if it is not one."""
    match = _DURATION.fullmatch(text)
    if not match or (unit_required and match.group(2) is None):
        return None
    return float(match.group(1)) * UNITS[match.group(2) or "s"]


def parse_duration(text: str) -> float:
    """argparse's `type=` for a duration option (a plain number is seconds)."""
    value = seconds(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (examples: {EXAMPLES}; a plain number is seconds)")
    return value
