"""One duration grammar for the command line and the transform YAML (zync/durations.py)."""

from __future__ import annotations

import argparse

import pytest

from compiler.spec import ExpireAfter, TransformError, _expire_after
from zync.durations import parse_duration, seconds


@pytest.mark.parametrize("text, expected", [
    ("500ms", 0.5), ("1s", 1.0), ("1.5s", 1.5), ("2m", 120.0), ("1h", 3600.0), ("7d", 604800.0), (" 3 s ", 3.0),
    ("10", 10.0),  # a plain number is seconds on the command line
])
def test_the_command_line_takes_every_unit(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "s", "-1s", "1w", "1 hour", "1e3s"])
def test_the_command_line_refuses_what_is_not_a_duration_and_shows_examples(text):
    with pytest.raises(argparse.ArgumentTypeError, match="is not a duration.*500ms"):
        parse_duration(text)


def test_the_yaml_needs_a_unit_because_a_plain_number_counts_offsets():
    assert seconds("10", unit_required=True) is None
    assert seconds("10ms", unit_required=True) == 0.01


@pytest.mark.parametrize("value, expected", [
    (1000, ExpireAfter(offsets=1000)), ("30m", ExpireAfter(seconds=1800.0)), ("500ms", ExpireAfter(seconds=0.5)),
    ("7d", ExpireAfter(seconds=604800.0)),
])
def test_expire_after_reads_offsets_or_the_same_durations(tmp_path, value, expected):
    assert _expire_after(tmp_path / "t.yml", {"topic": "A", "expire-after": value}) == expected


@pytest.mark.parametrize("value", ["10", "0s", 0, -5, "soon", True])
def test_expire_after_refuses_anything_else_with_what_to_write(tmp_path, value):
    with pytest.raises(TransformError, match=r"positive number of offsets \(e.g. 1000\) or a duration \(e.g. 500ms"):
        _expire_after(tmp_path / "t.yml", {"topic": "A", "expire-after": value})
