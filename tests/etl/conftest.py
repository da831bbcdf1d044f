"""Fixtures for the ETL tests: scratch dbt projects over raw tables written directly by Spark."""

from __future__ import annotations

import pytest

from tests.etl.scratch import make_project


@pytest.fixture
def project(tmp_path, spark):
    """make(transforms, seeds=None, schemas=None) -> Project: compile transform files into a scratch dbt project."""

    def make(transforms: dict[str, str], **options):
        return make_project(tmp_path, spark, transforms, **options)

    return make
