"""`--shaper F.sql`: a Spark SQL SELECT over the view `batch`, checked to keep the Kafka envelope.

The envelope is what exactly-once rests on (the resume point is the table's
largest kafka.offset), so a shaper may add, drop or rewrite `key`, `value` and
other columns, one row per record, but must pass `kafka` through untouched.
"""

from __future__ import annotations

from pathlib import Path

import sqlglot
from sqlglot import expressions as exp

from zync.errors import ZyncError

VIEW = "batch"


class ShaperError(ZyncError):
    """The shaper is not a SELECT over `batch` that keeps `kafka` as it is."""


def load_shaper(path: Path) -> str:
    """The shaper's SQL, after checking it statically (one SELECT, `kafka` passed through)."""
    if not path.is_file():
        raise ShaperError(f"shaper {path} does not exist")
    sql = path.read_text()
    check_shaper(sql, str(path))
    return sql


def check_shaper(sql: str, where: str) -> None:
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.ParseError as e:
        raise ShaperError(f"shaper {where} is not Spark SQL: {e}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Select):
        raise ShaperError(f"shaper {where} must be one SELECT over the view `{VIEW}`")
    select = statements[0]
    for clause in ("where", "group", "having", "limit", "qualify", "joins", "distinct", "offset"):
        if select.args.get(clause):
            raise ShaperError(
                f"shaper {where} has {clause.upper().rstrip('S')}: a shaper maps each record to exactly one "
                "row (the table's largest offset is the resume point, so a dropped or added row would be read "
                "again or stand for a record it is not). Reshape columns only; filter in dbt models."
            )
    keeps = False
    for projection in select.expressions:
        if isinstance(projection, exp.Star):
            keeps = True
        elif isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
            keeps = True  # batch.*
        elif isinstance(projection, exp.Column) and projection.name == "kafka":
            keeps = True
        elif projection.alias_or_name == "kafka":
            raise ShaperError(
                f"shaper {where} rewrites the `kafka` column ({projection.sql(dialect='spark')}): "
                "the Kafka envelope (topic, partition, offset, ...) must pass through unchanged, since the "
                "table's offsets are ingest's resume point. Select `kafka` as it is."
            )
    if not keeps:
        raise ShaperError(
            f"shaper {where} drops the `kafka` column: select it (or *) unchanged, since the table's "
            "offsets are ingest's resume point"
        )


def check_shaped_schema(shaped, envelope_type, where: str) -> None:
    """At run time: the shaped batch's `kafka` column has the envelope's type exactly."""
    fields = {f.name: f.dataType for f in shaped.schema.fields}
    # Nullability may differ after a projection; names and types may not.
    if "kafka" not in fields or fields["kafka"].simpleString() != envelope_type.simpleString():
        found = fields["kafka"].simpleString() if "kafka" in fields else "no kafka column"
        raise ShaperError(
            f"shaper {where} changes the `kafka` column (it gives {found}; ingest needs "
            f"{envelope_type.simpleString()}): pass it through unchanged"
        )
