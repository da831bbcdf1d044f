"""Fixtures for the ETL tests: scratch dbt projects over raw tables written directly by Spark.

Their dbt runs execute as `zync run` executes a small run of an output model
(service/engine_settings.py: `small_run_engine`, interpreted, adaptive execution off),
which is how most runs of an output model execute in production; the
compiled plan of a hand-run `dbt run` is what tests/integration,
tests/service, tests/cluster and tests/debezium run.
"""

from __future__ import annotations

import pytest

from service.engine_settings import small_run_engine
from testkit.scratch import ScratchProject, make_scratch_project


@pytest.fixture
def project(tmp_path, spark):
    """make(transforms, seeds=None, schemas=None) -> ScratchProject: transform files compiled into a scratch project."""

    def make(transforms: dict[str, str], **options) -> ScratchProject:
        return make_scratch_project(tmp_path / "project", transforms, spark=spark, engine=small_run_engine, **options)

    return make
