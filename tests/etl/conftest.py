"""Fixtures for the ETL tests: scratch dbt projects over raw tables written directly by Spark."""

from __future__ import annotations

import pytest

from tests.support.scratch import ScratchProject, make_scratch_project


@pytest.fixture
def project(tmp_path, spark):
    """make(transforms, seeds=None, schemas=None) -> ScratchProject: transform files compiled into a scratch project."""

    def make(transforms: dict[str, str], **options) -> ScratchProject:
        return make_scratch_project(tmp_path / "project", transforms, spark=spark, **options)

    return make
