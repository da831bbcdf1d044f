"""A dbt plugin (dbt-core finds top-level `dbt_*` modules with a `plugins` list): before a dbt
command talks to Spark, check that the target's shared catalog answers.

Without it, `dbt run` with the catalog down spends half a minute in Spark's
Hive client retries and ends in "Unable to instantiate SessionHiveMetaStoreClient";
with it, dbt stops at once with zync's message. Targets without a catalog
server (e.g. `method: thrift`) are not checked.
"""

from __future__ import annotations

import click
from dbt.flags import get_flags
from dbt.plugins.manager import dbtPlugin

from zync.config import catalog_address
from zync.spark import check_catalog

# Commands that never open a Spark connection.
_OFFLINE = {"parse", "list", "ls", "deps", "clean", "init", "debug"}


class ZyncCatalogCheck(dbtPlugin):
    def initialize(self) -> None:
        if getattr(get_flags(), "WHICH", None) in _OFFLINE:
            return
        context = click.get_current_context(silent=True)
        profile = (context.obj or {}).get("profile") if context is not None else None
        credentials = getattr(profile, "credentials", None)
        if getattr(credentials, "method", None) != "session":
            return
        # A ZyncError here becomes dbt's own error, printed without a traceback.
        check_catalog(catalog_address(credentials.server_side_parameters or {}))


plugins = [ZyncCatalogCheck]
