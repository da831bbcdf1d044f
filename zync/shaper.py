"""`--shaper F.sql`: a Spark SQL SELECT over the view `batch`, for ingest (from-kafka) and egress (to-kafka).

Both directions take the same file shape and run it the same way; what each
demands of it differs, and is written down as data (`INGEST`, `EGRESS`):
- ingest checks the SQL before reading anything: one row per record (no WHERE,
  GROUP BY, JOIN, ...) and `kafka` passed through untouched, because the raw
  table's largest kafka.offset is its resume point; a dropped row would be read
  again, an added one would stand for a record it is not;
- egress lets rows go (its offset check finds a dropped one and stops before
  publishing it), but the result must keep kafka, key and value, with
  kafka.topic and kafka.offset as they were, since they align rows with the
  output topic's offsets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlglot
from pyspark.errors import AnalysisException
from pyspark.sql import types as T
from sqlglot import expressions as exp

from zync.envelope import kafka_struct
from zync.errors import ZyncError

VIEW = "batch"
# Clauses that add, drop or merge rows.
_ROW_CHANGING = ("where", "group", "having", "limit", "qualify", "joins", "distinct", "offset")


class ShaperError(ZyncError):
    """The shaper does not do what its direction needs; the message says what to change."""


@dataclass(frozen=True)
class Rules:
    """What one direction demands of a shaper."""

    direction: str
    one_row_per_record: bool  # refuse row-changing clauses before running
    kafka_in_select: bool  # `kafka` (or *) must be selected as it is
    required_columns: tuple[str, ...]  # the result must have these
    kafka_fields: tuple[str, ...] | None  # these kafka fields keep their types (None: the whole envelope)


INGEST = Rules("from-kafka", one_row_per_record=True, kafka_in_select=True, required_columns=("kafka",),
               kafka_fields=None)
EGRESS = Rules("to-kafka", one_row_per_record=False, kafka_in_select=False,
               required_columns=("kafka", "key", "value"), kafka_fields=("topic", "offset"))


@dataclass(frozen=True)
class Shaper:
    sql: str
    name: str  # the file, for messages
    rules: Rules

    @classmethod
    def load(cls, path: Path, rules: Rules) -> Shaper:
        """The shaper in `path`, checked statically (before anything is read)."""
        if not path.is_file():
            raise ShaperError(f"shaper {path} does not exist")
        sql = path.read_text()
        check_shaper(sql, str(path), rules)
        return cls(sql, str(path), rules)

    def apply(self, frame):
        """The shaper's result over `frame` (registered as the view `batch`), checked against the rules."""
        frame.createOrReplaceTempView(VIEW)
        try:
            shaped = frame.sparkSession.sql(self.sql)
        except AnalysisException as e:
            raise ShaperError(f"shaper {self.name}: Spark cannot run it over `{VIEW}`: "
                              f"{str(e).splitlines()[0]}") from None
        self._check_result(shaped.schema)
        return shaped

    def _check_result(self, schema: T.StructType) -> None:
        missing = [c for c in self.rules.required_columns if c not in schema.names]
        if missing:
            raise ShaperError(
                f"shaper {self.name}: its result lacks column(s) {missing}; a {self.rules.direction} shaper keeps "
                f"{', '.join(self.rules.required_columns)} (and, for to-kafka, `fields` for partial rows); it "
                f"returned {schema.names}")
        found = schema["kafka"].dataType
        envelope = kafka_struct()
        if self.rules.kafka_fields is None:
            # Nullability may differ after a projection; names and types may not.
            if found.simpleString() != envelope.simpleString():
                raise ShaperError(
                    f"shaper {self.name} changes the `kafka` column (it gives {found.simpleString()}; ingest "
                    f"needs {envelope.simpleString()}): pass it through unchanged")
            return
        types = {f.name: f.dataType for f in found.fields} if isinstance(found, T.StructType) else {}
        if any(types.get(f) != envelope[f].dataType for f in self.rules.kafka_fields):
            raise ShaperError(
                f"shaper {self.name}: it changed the kafka column ({found.simpleString()}); a shaper must keep "
                f"{' and '.join('kafka.' + f for f in self.rules.kafka_fields)} as they are")


def check_shaper(sql: str, where: str, rules: Rules = INGEST) -> None:
    """The static rules: one SELECT over `batch`; for ingest, one row per record and `kafka` untouched."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.ParseError as e:
        raise ShaperError(f"shaper {where} is not Spark SQL: {e}") from None
    wanted = exp.Select if rules.one_row_per_record else exp.Query
    if len(statements) != 1 or not isinstance(statements[0], wanted):
        raise ShaperError(f"shaper {where} must be one SELECT over the view `{VIEW}` (found {len(statements)} "
                          f"statements, first {type(statements[0]).__name__ if statements else 'none'})")
    select = statements[0]
    if rules.one_row_per_record:
        for clause in _ROW_CHANGING:
            if select.args.get(clause):
                raise ShaperError(
                    f"shaper {where} has {clause.upper().rstrip('S')}: a shaper maps each record to exactly one "
                    "row (the table's largest offset is the resume point, so a dropped or added row would be "
                    "read again or stand for a record it is not). Reshape columns only; filter in dbt models."
                )
    if rules.kafka_in_select:
        _check_kafka_selected(select, where)


def _check_kafka_selected(select: exp.Select, where: str) -> None:
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
