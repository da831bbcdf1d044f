"""A dbt plugin (dbt-core finds top-level `dbt_*` modules with a `plugins` list) for targets of
dbt-spark's `session` method, set up as each dbt command starts:

- check that the target's shared catalog answers. Without it, `dbt run` with
  the catalog down spends half a minute in Spark's Hive client retries and
  ends in "Unable to instantiate SessionHiveMetaStoreClient"; with it, dbt
  stops at once with zync's message;
- run each of dbt's model threads on a session of its own (thread_sessions.py),
  so that `threads` above 1 keeps every mirror's cursor with its own commit.

Targets without a catalog server (e.g. `method: thrift`) are left alone.
"""

from __future__ import annotations

from typing import Any

import click
from dbt.flags import get_flags
from dbt.plugins.manager import dbtPlugin

from zync.spark import check_catalog

# Commands that never open a Spark connection.
_OFFLINE = {"parse", "list", "ls", "deps", "clean", "init", "debug"}


def _session_credentials() -> Any | None:
    """The command's target credentials if it talks to Spark through dbt-spark's `session` method."""
    if getattr(get_flags(), "WHICH", None) in _OFFLINE:
        return None
    context = click.get_current_context(silent=True)
    profile = (context.obj or {}).get("profile") if context is not None else None
    credentials = getattr(profile, "credentials", None)
    return credentials if getattr(credentials, "method", None) == "session" else None


class ZyncCatalogCheck(dbtPlugin):
    def initialize(self) -> None:
        credentials = _session_credentials()
        if credentials is not None:
            # A ZyncError here becomes dbt's own error, printed without a traceback.
            check_catalog(credentials.server_side_parameters or {})


class ZyncThreadSessions(dbtPlugin):
    def initialize(self) -> None:
        if _session_credentials() is not None:
            from dbt_zync import thread_sessions  # imports pyspark: only for the commands that need it

            thread_sessions.install()
            thread_sessions.new_invocation()


plugins = [ZyncCatalogCheck, ZyncThreadSessions]
