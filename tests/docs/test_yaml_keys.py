"""The YAML reference pages have a table of keys for every kind of entry, naming exactly the
settings the compiler takes: a setting added to (or dropped from) compiler/spec.py or
compiler/mirrors.py fails here until its page says so."""
import re
from pathlib import Path

import pytest

from compiler import mirrors, spec

ROOT = Path(__file__).resolve().parents[2]
TRANSFORM_PAGE = ROOT / "docs" / "reference" / "transform-yaml.md"
MIRROR_PAGE = ROOT / "docs" / "reference" / "mirror-yaml.md"


def _tables(page: Path) -> dict[str, set[str]]:
    """Each `###` section under `## Keys`: the keys its table's first column names."""
    text = page.read_text()
    section = text.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    tables = {}
    for block in section.split("\n### ")[1:]:
        title, _, body = block.partition("\n")
        rows = [line.split("|")[1] for line in body.splitlines() if line.startswith("| `")]
        tables[title.strip()] = {key for cell in rows for key in re.findall(r"`([^`]+)`", cell)}
    return tables


@pytest.mark.parametrize("page, title, keys", [
    (TRANSFORM_PAGE, "The file", spec.FILE_KEYS),
    (TRANSFORM_PAGE, "An input", spec.INPUT_KEYS),
    (TRANSFORM_PAGE, "The output", spec.OUTPUT_KEYS),
    (TRANSFORM_PAGE, "A rule (an item of `transforms:`)", spec.DENORM_KEYS | spec.STATELESS_KEYS),
    (TRANSFORM_PAGE, "A lookup (an item of `lookups:`) and a join (an item of a rule's `join:`)",
     spec.LOOKUP_KEYS | spec.JOIN_KEYS),
    (MIRROR_PAGE, "A mirror of one topic", mirrors.MIRROR_KEYS),
    (MIRROR_PAGE, "A mirror of every topic a pattern matches", mirrors.PATTERN_KEYS),
])
def test_a_table_names_every_key_the_compiler_takes(page, title, keys):
    tables = _tables(page)
    assert title in tables, f"{page.relative_to(ROOT)}: no table `### {title}` under `## Keys` (has {sorted(tables)})"
    assert tables[title] == set(keys), (
        f"{page.relative_to(ROOT)}, {title}: missing {sorted(set(keys) - tables[title])}, "
        f"not a setting {sorted(tables[title] - set(keys))}")
