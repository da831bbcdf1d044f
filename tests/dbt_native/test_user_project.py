"""A user's own project: the shipped demo's models stay out of its `dbt run` and `dbt test`.

The demo's transforms (demo/invoices/transforms/) compile into models/*/demo/, which
dbt_project.yml enables only with ZYNC_DEMO=true: a deployment that never ingests the
demo's topics must not fail its first run on `raw_invoices` not found.
"""

from __future__ import annotations

import os

import pytest
from dbt.cli.main import dbtRunner

ROOT = os.environ["ZYNC_PROJECT_DIR"]
DEMO_MODELS = {"new_invoices", "new_invoices__pending", "invoices_mirror"}


def dbt(*args: str):
    os.chdir(ROOT)
    return dbtRunner().invoke([*args, "--project-dir", ROOT, "--profiles-dir", f"{ROOT}/profiles"])


def model_names() -> set[str]:
    result = dbt("ls", "--resource-type", "model", "--output", "name", "--quiet")
    assert result.success, result.exception
    return set(result.result)


def test_the_demo_models_are_enabled_only_with_zync_demo(monkeypatch):
    assert DEMO_MODELS <= model_names()
    monkeypatch.setenv("ZYNC_DEMO", "false")
    assert not DEMO_MODELS & model_names()


@pytest.mark.parametrize("command", ["run", "test"])
def test_a_users_run_and_test_pass_without_the_demos_raw_tables(spark, monkeypatch, command):
    spark.sql("create database if not exists zync")
    monkeypatch.setenv("ZYNC_DEMO", "false")
    result = dbt(command)
    assert result.success, result.exception or result.result
    assert not {r.node.name for r in result.result} & DEMO_MODELS
