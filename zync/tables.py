"""Spark table names: raw tables, dead-letter tables, qualified names (the envelope is in zync/envelope.py)."""

from __future__ import annotations

import re

from zync.config import Target
from zync.errors import ZyncError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
DEAD_LETTERS_SUFFIX = "__dead_letters"
# A mirror's name is a view; the Delta table its runs fold into is this suffix after it
# (macros/mirror/materialization/zync_mirror_base_suffix.sql).
MIRROR_BASE_SUFFIX = "__base"


def snake(name: str) -> str:
    """A name in snake case (InvoiceStatus -> invoice_status), as generated names use."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()


def raw_table_name(topic: str) -> str:
    """The default raw table of a topic: raw_ + the topic in snake case (InvoiceStatus -> raw_invoice_status)."""
    return "raw_" + snake(topic)


def pending_report_name(model: str) -> str:
    """The view beside an output model that lists what waits and why: new_invoices -> new_invoices__pending."""
    return f"{model}__pending"


def qualified(target: Target, name: str) -> str:
    """`db`.`table` for a table name, in the target's schema unless it names one."""
    if not _NAME.match(name):
        raise ZyncError(f"{name!r} is not a table name (letters, digits and _, optionally database.table)")
    db, _, table = name.rpartition(".")
    return f"`{db or target.schema}`.`{table}`"


def dead_letter_table_name(raw_table: str) -> str:
    """The dead-letter table beside a raw table (errors.tolerance: all): raw_invoices -> raw_invoices__dead_letters."""
    return raw_table + DEAD_LETTERS_SUFFIX
