"""`zync init`'s project, without services: what it holds, what it refuses, and that its transforms
compile as generated (tests/integration/test_own_project.py runs one against Kafka, Spark and dbt)."""

from pathlib import Path

import pytest
import yaml

from cli.init_project import INSTALLATION, init_project
from compiler.build import compile_transforms, transform_files
from zync.errors import ZyncError


def _without_demo(settings):
    """dbt settings with the demo's entries taken out (a user's project has no demo)."""
    if not isinstance(settings, dict):
        return settings
    kept = {k: _without_demo(v) for k, v in settings.items() if k != "demo"}
    return {k: v for k, v in kept.items() if v != {}}  # a folder that held only the demo


def test_the_project_holds_its_own_files_and_links_the_installations(tmp_path):
    project = tmp_path / "shop"
    lines = init_project(project, topics=r"pg\.public\..*")
    assert any("zync etl compile" in line for line in lines)
    for own in ("dbt_project.yml", "profiles/profiles.yml", "profiles/zync.yml", "transforms/mirrors.yml",
                "transforms/orders_with_customers.yml.example", ".gitignore"):
        assert (project / own).is_file(), own
    assert (project / "profiles.yml").resolve() == (project / "profiles" / "profiles.yml").resolve()
    assert (project / "zync_macros").resolve() == INSTALLATION / "macros"
    assert (project / ".local" / "jars").resolve() == INSTALLATION / ".local" / "jars"
    # Its services, warehouse and catalog are its own, never the installation's.
    assert not [p for p in (project / ".local").iterdir() if p.name.endswith("state")]
    ignored = (project / ".gitignore").read_text().split()
    assert {".local/", "zync_macros", "jvm", "target/"} <= set(ignored)


def test_the_generated_transforms_compile(tmp_path):
    project = tmp_path / "shop"
    init_project(project, topics=r"pg\.public\..*")
    example = project / "transforms" / "orders_with_customers.yml.example"
    example.rename(example.with_suffix(""))  # as its first line tells the user
    generated = compile_transforms(transform_files(project), project,
                                   topics=lambda: {"pg.public.orders", "pg.public.customers", "other.public.x"})
    paths = {str(g.path) for g in generated}
    assert {"models/mirrors/orders.sql", "models/mirrors/customers.sql",
            "models/outputs/orders_with_customers.sql"} <= paths, sorted(paths)
    assert not any("other" in p for p in paths)


def test_its_dbt_settings_are_the_installations_without_the_demo(tmp_path):
    init_project(tmp_path / "shop")
    mine = yaml.safe_load((tmp_path / "shop" / "dbt_project.yml").read_text())
    installed = yaml.safe_load((INSTALLATION / "dbt_project.yml").read_text())
    for key in ("name", "profile", "models", "vars"):
        assert mine[key] == _without_demo(installed[key]), key


@pytest.mark.parametrize("make_it", ["a file", "a folder with a file"])
def test_a_folder_in_use_is_refused(tmp_path, make_it):
    taken = tmp_path / "taken"
    if make_it == "a file":
        taken.write_text("mine")
    else:
        taken.mkdir()
        (taken / "notes.txt").write_text("mine")
    with pytest.raises(ZyncError, match="not an empty folder"):
        init_project(taken)
    assert sorted(p.name for p in tmp_path.rglob("*")) == (["taken"] if make_it == "a file" else ["notes.txt", "taken"])


def test_a_bad_pattern_is_refused_before_anything_is_made(tmp_path):
    with pytest.raises(ZyncError, match="not a regular expression"):
        init_project(tmp_path / "shop", topics="pg.(")
    assert not (tmp_path / "shop").exists()
