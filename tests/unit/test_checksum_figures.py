"""A table's figures from its checksum file's head (zync/delta_metadata.py checksum_figures): Delta's
field order, a checksum whose head lacks them, and the metadata's own text, which must not be taken for them."""

from __future__ import annotations

import json

from zync.delta_metadata import CHECKSUM_HEAD_BYTES, checksum_figures


def _checksum(tmp_path, version: int, fields: dict) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir(exist_ok=True)
    (log / f"{version:020d}.crc").write_text(json.dumps(fields, separators=(",", ":")))


def test_the_figures_are_read_from_a_checksum_as_delta_writes_it(tmp_path):
    # Delta's order (VersionChecksum), with a pool's long metadata naming a "numFiles" of its own.
    schema = json.dumps({"fields": [{"name": "numFiles", "metadata": {"numFiles": 1}}] * 2000})
    _checksum(tmp_path, 7, {"txnId": "t", "tableSizeBytes": 3251125, "numFiles": 50, "numMetadata": 1,
                            "metadata": {"schemaString": schema, "configuration": {"numFiles": "9"}},
                            "allFiles": [{"path": "p", "size": 1}] * 3000})
    assert len((tmp_path / "_delta_log" / f"{7:020d}.crc").read_bytes()) > 100 * CHECKSUM_HEAD_BYTES
    assert checksum_figures(str(tmp_path), 7) == (50, 3251125)
    # Only the head is read: the rest could be anything.
    path = tmp_path / "_delta_log" / f"{7:020d}.crc"
    path.write_bytes(path.read_bytes()[:CHECKSUM_HEAD_BYTES] + b"not JSON")
    assert checksum_figures(str(tmp_path), 7) == (50, 3251125)


def test_a_checksum_whose_head_lacks_the_figures_is_read_whole(tmp_path):
    _checksum(tmp_path, 3, {"txnId": "t" * (2 * CHECKSUM_HEAD_BYTES), "numMetadata": 1,
                            "metadata": {"configuration": {"numFiles": "9"}}, "numFiles": 4, "tableSizeBytes": 800})
    assert checksum_figures(str(tmp_path), 3) == (4, 800)


def test_no_checksum_no_figures(tmp_path):
    assert checksum_figures(str(tmp_path), 1) is None
    assert checksum_figures(None, 1) is None
