"""A topic's errors.tolerance as the project's sources file says it (zync/ingest_options.py)."""

from __future__ import annotations

import os

import pytest
import yaml

from zync.errors import ZyncError
from zync.ingest_options import SOURCES_FILE, TOLERANCE_META, configured_tolerance


def write_sources(root, tolerances: dict[str, str | None]) -> None:
    tables = [{"name": f"raw_{i}", "meta": {"zync_topic": topic, **({TOLERANCE_META: t} if t else {})}}
              for i, (topic, t) in enumerate(tolerances.items())]
    path = root / SOURCES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"version": 2, "sources": [{"name": "raw", "tables": tables}]}))


def test_each_topic_gets_its_own_setting_and_none_where_the_project_says_nothing(tmp_path):
    write_sources(tmp_path, {"pg.public.a": "all", "pg.public.b": None, "pg.public.c": "none"})
    assert configured_tolerance("pg.public.a", tmp_path) == "all"
    assert configured_tolerance("pg.public.b", tmp_path) is None
    assert configured_tolerance("pg.public.c", tmp_path) == "none"
    assert configured_tolerance("pg.public.unknown", tmp_path) is None
    assert configured_tolerance("pg.public.a", tmp_path / "elsewhere") is None  # no sources file


def test_a_rewritten_file_is_read_again(tmp_path):
    write_sources(tmp_path, {"pg.public.a": "all"})
    assert configured_tolerance("pg.public.a", tmp_path) == "all"
    write_sources(tmp_path, {"pg.public.a": "none"})
    path = tmp_path / SOURCES_FILE
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a rewrite within the clock's step
    assert configured_tolerance("pg.public.a", tmp_path) == "none"


def test_a_file_that_is_not_yaml_is_named_with_what_to_do(tmp_path):
    path = tmp_path / SOURCES_FILE
    path.parent.mkdir(parents=True)
    path.write_text("sources: [unclosed\n")
    with pytest.raises(ZyncError, match=r"(?s)__sources.yml: not valid YAML .*zync etl compile"):
        configured_tolerance("pg.public.a", tmp_path)
