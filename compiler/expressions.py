"""User SQL expressions: parse with sqlglot, check, rewrite record names, render Spark SQL.

zync's scripts name their records `left`, `right` and `in`: SQL keywords. They
are rewritten to `left_record`, `right_record` and `in_record`, the aliases the
macros give the input rows, and every identifier is quoted on the way out.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from compiler.spec import Text, TransformError

DIALECT = "spark"
RECORD_ALIASES = {"left": "left_record", "right": "right_record", "in": "in_record"}
# The columns every raw table has; unqualified names in `where` refer to them.
RAW_COLUMNS = ("kafka", "key", "value")

_STATEMENTS = (exp.Query, exp.Command, exp.Create, exp.Drop, exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Use)


def parse(text: Text) -> exp.Expression:
    """Parse one SQL expression; statements, subqueries and `;` are refused."""
    if ";" in text.sql:
        raise TransformError(text.where, "only a SQL expression is allowed here, not statements (found `;`)", text.sql)
    try:
        tree = sqlglot.parse_one(text.sql, read=DIALECT)
    except ParseError as e:
        message = e.errors[0]["description"] if e.errors else str(e)
        raise TransformError(text.where, f"not a valid SQL expression: {message}", text.sql) from None
    if tree is None or any(isinstance(node, _STATEMENTS) for node in tree.walk()):
        raise TransformError(text.where, "only a SQL expression is allowed here, not a query or statement", text.sql)
    return tree


def _first_part(column: exp.Column) -> exp.Identifier:
    return column.parts[0]


def qualify_records(tree: exp.Expression, allowed: tuple[str, ...], text: Text, unqualified_ok: bool) -> exp.Expression:
    """Rewrite `left.`/`right.`/`in.` paths to the macros' aliases; refuse other roots.

    allowed: the record names this expression may use (e.g. ("left", "right")).
    unqualified_ok: whether bare `value.op` / `kafka.offset` paths are allowed
    (a rule's `where` runs over one input's rows before any join).
    """
    tree = tree.copy()
    for column in list(tree.find_all(exp.Column)):
        root = _first_part(column)
        name = root.name
        if name in allowed and len(column.parts) > 1:
            root.replace(exp.to_identifier(RECORD_ALIASES[name]))
        elif unqualified_ok and name in RAW_COLUMNS:
            continue
        else:
            names = ", ".join(f"{a}." for a in allowed)
            if unqualified_ok:
                names += ", or the input's own " + ", ".join(RAW_COLUMNS)
            raise TransformError(
                text.where, f"`{column.sql(dialect=DIALECT)}` does not name a record field: start it with {names}", text.sql
            )
    return tree


def render(tree: exp.Expression) -> str:
    """Spark SQL with every identifier quoted."""
    return tree.sql(dialect=DIALECT, identify=True)


def expression(text: Text, allowed: tuple[str, ...], unqualified_ok: bool = False) -> exp.Expression:
    return qualify_records(parse(text), allowed, text, unqualified_ok)


def join_keys(text: Text) -> list[tuple[exp.Expression, exp.Expression]]:
    """Split `join-on` into (left expression, right expression) pairs.

    It must be an equality or a conjunction of equalities, each with one side
    over `left.` and the other over `right.` (either order).
    """
    tree = expression(text, ("left", "right"))
    conjuncts = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
    pairs = []
    for conjunct in conjuncts:
        if not isinstance(conjunct, exp.EQ):
            raise TransformError(
                text.where, "join-on must be an equality (or equalities joined with AND)",
                text.sql,
            )
        sides = []
        for operand in (conjunct.left, conjunct.right):
            roots = {_first_part(c).name for c in operand.find_all(exp.Column)}
            if len(roots) != 1:
                raise TransformError(
                    text.where, "each side of a join-on equality must use exactly one of left. or right.", text.sql
                )
            sides.append((roots.pop(), operand))
        by_root = dict(sides)
        if set(by_root) != {"left_record", "right_record"}:
            raise TransformError(text.where, "each join-on equality compares a left. field with a right. field", text.sql)
        pairs.append((by_root["left_record"], by_root["right_record"]))
    return pairs


def named_struct(fields: dict[str, exp.Expression]) -> exp.Expression:
    """Spark's named_struct('a', <a>, 'b', <b>) for a key or nested value mapping."""
    args: list[exp.Expression] = []
    for name, value in fields.items():
        args += [exp.Literal.string(name), value]
    return exp.Anonymous(this="named_struct", expressions=args)


def string_list(values: list[str]) -> str:
    """A Spark array of string literals, e.g. the field list of a partial row."""
    return render(exp.Array(expressions=[exp.Literal.string(v) for v in values]))
