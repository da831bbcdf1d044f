"""A JSON file `zync run` rewrites while others read it (`zync etl status`, the next run).

Written whole to a file beside it, then renamed over it: a reader, or a run killed mid-write,
meets the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_json(path: Path, value: Any, **dumps: Any) -> None:
    """`value` as JSON in `path` (folders made), replacing it at once; `dumps`: json.dumps's options."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(value, **dumps))
    partial.replace(path)
