"""`zync init FOLDER`: a project of the user's own, made from cli/project_template/.

The project holds what is the user's (dbt_project.yml, profiles/, transforms/, models/, seeds/,
macros/) and links to what belongs to the zync installation that made it: its macros
(zync_macros), its fetched jars and registry (.local/<each>), its JVM settings (jvm). Its own
embedded services, warehouse and catalog live in its own .local/state.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from zync.errors import ZyncError

INSTALLATION = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).resolve().parent / "project_template"
# A Debezium table topic, <topic prefix>.<schema or database>.<table>: not Kafka's or Connect's own topics.
DEFAULT_TOPICS = r"[^.]+\.[^.]+\.[^.]+"
# Linked, not copied: they are the installation's and change with it (`make setup`).
LINKED = {"zync_macros": "macros", "jvm": "jvm"}
# The installation's .local holds state folders too (names ending in `state`): never shared.
_STATE = re.compile(r".*state$")


def init_project(folder: Path, topics: str = DEFAULT_TOPICS) -> list[str]:
    """Make the project in `folder` (new or empty); the lines to print: what was made, what to run next."""
    try:
        re.compile(topics)
    except re.error as e:
        raise ZyncError(f"--topics {topics!r} is not a regular expression: {e}") from None
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ZyncError(f"{folder} exists and is not an empty folder: give zync init a new or empty folder")
    if INSTALLATION in (folder.resolve(), *folder.resolve().parents):
        raise ZyncError(f"{folder} is inside the zync installation {INSTALLATION}: make your project elsewhere")
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TEMPLATE / "dbt_project.yml", folder / "dbt_project.yml")
    shutil.copy(TEMPLATE / "gitignore", folder / ".gitignore")
    (folder / "profiles").mkdir()
    # The installation's dbt profile as it is: its Spark settings name the linked jars and JVM settings.
    shutil.copy(INSTALLATION / "profiles" / "profiles.yml", folder / "profiles" / "profiles.yml")
    shutil.copy(TEMPLATE / "profiles" / "zync.yml", folder / "profiles" / "zync.yml")
    # dbt run from the project folder finds its profile here, as in the installation.
    (folder / "profiles.yml").symlink_to(Path("profiles") / "profiles.yml")
    (folder / "transforms").mkdir()
    mirrors = (TEMPLATE / "transforms" / "mirrors.yml").read_text().format(topics=topics.replace("'", "''"))
    (folder / "transforms" / "mirrors.yml").write_text(mirrors)
    shutil.copy(TEMPLATE / "transforms" / "orders_with_customers.yml.example",
                folder / "transforms" / "orders_with_customers.yml.example")
    for own in ("models", "macros", "seeds", "tests"):
        (folder / own).mkdir()
    for name, target in LINKED.items():
        (folder / name).symlink_to(INSTALLATION / target)
    local = folder / ".local"
    local.mkdir()
    installed = INSTALLATION / ".local"
    for item in sorted(installed.iterdir()) if installed.is_dir() else []:
        if not item.name.startswith(".") and not _STATE.match(item.name):
            (local / item.name).symlink_to(item)
    if not (local / "jars").exists():
        raise ZyncError(f"the zync installation {INSTALLATION} has no .local/jars: run `make setup` there, then "
                        f"zync init again into an empty {folder}")
    return [f"zync init: made the project {folder} (transforms/mirrors.yml mirrors every topic matching '{topics}')",
            "next, in that folder:",
            "  zync up              # the embedded Kafka, registry and catalog (or set your own in profiles/zync.yml)",
            "  zync etl compile     # transforms/*.yml -> models/",
            "  zync run             # ingest, dbt run, publish; Ctrl-C stops it",
            "  dbt test && dbt docs generate"]
