"""GNU-style durations for --exit-after: 500ms, 1s, 2m, 1h, or plain seconds."""

from __future__ import annotations

import argparse
import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (examples: 500ms, 1s, 2m, 1h)")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]
