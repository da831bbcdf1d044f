"""User SQL expressions: parse with sqlglot, check, rewrite record names, render Spark SQL.

zync's scripts name their records `left`, `right` and `in`: SQL keywords. They
are rewritten to `left_record`, `right_record` and `in_record`, the aliases the
macros give the input rows, and every identifier is quoted on the way out.
"""

from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from compiler.spec import Text, TransformError

DIALECT = "spark"
RECORD_ALIASES = {"left": "left_record", "right": "right_record", "in": "in_record"}
# The columns every raw table has; unqualified names in `where` refer to them.
RAW_COLUMNS = ("kafka", "key", "value")

_STATEMENTS = (exp.Query, exp.Command, exp.Create, exp.Drop, exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Use)


def parse(text: Text) -> exp.Expression:
    """Parse one SQL expression; statements (two separated by `;`), queries and subqueries are refused.
    A `;` inside a string literal is text (sqlglot's tokenizer tells them apart).

    Each text is parsed once (the checks and the model builder all ask for
    it); callers get their own copy to rewrite.
    """
    return _parse(text).copy()


@functools.lru_cache(maxsize=4096)
def _parse(text: Text) -> exp.Expression:
    try:
        trees = [t for t in sqlglot.parse(text.sql, read=DIALECT) if t is not None]
    except ParseError as e:
        message = e.errors[0]["description"] if e.errors else str(e)
        raise TransformError(text.where, f"not a valid SQL expression: {message}", text.sql) from None
    except TokenError as e:  # an unterminated string or quoted name, for one
        cause = f": {e.__cause__}" if e.__cause__ else ""
        raise TransformError(text.where, f"not a valid SQL expression: {e}{cause}", text.sql) from None
    if len(trees) > 1:
        raise TransformError(text.where, "only a SQL expression is allowed here, not statements (found `;`)", text.sql)
    if not trees or any(isinstance(node, _STATEMENTS) for node in trees[0].walk()):
        raise TransformError(text.where, "only a SQL expression is allowed here, not a query or statement", text.sql)
    return trees[0]


def _first_part(column: exp.Column) -> exp.Identifier:
    return column.parts[0]


def column_path(column: exp.Column) -> list[str]:
    """Every name of a field path, e.g. ['left', 'value', 'after', 'ID'] (sqlglot splits it into a Column and Dots)."""
    parts = [p.name for p in column.parts]
    node: exp.Expression = column
    while isinstance(node.parent, exp.Dot) and node.parent.this is node:
        node = node.parent
        parts.append(node.expression.name)
    return parts


def field_path(tree: exp.Expression) -> list[str] | None:
    """The names of an expression that is nothing but a field path (`in.value.after`), else None."""
    if isinstance(tree, exp.Column):
        return [p.name for p in tree.parts]
    if isinstance(tree, exp.Dot) and isinstance(tree.expression, exp.Identifier):
        head = field_path(tree.this)
        return None if head is None else [*head, tree.expression.name]
    return None


def lookup_alias(name: str) -> str:
    """The alias a lookup's rows get in the generated SQL (kept apart from the model's CTE names)."""
    return f"lookup_{name}"


def qualify_records(tree: exp.Expression, allowed: tuple[str, ...], text: Text, unqualified_ok: bool,
                    lookups: tuple[str, ...] = (), other_lookups: tuple[str, ...] = (),
                    unqualified_record: str | None = None) -> exp.Expression:
    """Rewrite `left.`/`right.`/`in.` paths to the macros' aliases, and lookup paths to theirs; refuse other roots.

    allowed: the record names this expression may use (e.g. ("left", "right")).
    unqualified_ok: whether bare `value.op` / `kafka.offset` paths are allowed
    (a rule's `where` runs over one input's rows before any join).
    lookups: the lookups whose columns this expression may use (those the rule joins);
    other_lookups: the transform's other lookups, named in the error if used here.
    unqualified_record: a record name to put before bare `value.op` paths.
    """
    tree = tree.copy()
    for column in list(tree.find_all(exp.Column)):
        root = _first_part(column)
        name = root.name
        if name in allowed and len(column.parts) > 1:
            root.replace(exp.to_identifier(RECORD_ALIASES[name]))
        elif name in lookups and len(column.parts) > 1:
            root.replace(exp.to_identifier(lookup_alias(name)))
        elif unqualified_ok and name in RAW_COLUMNS:
            if unqualified_record:
                alias = exp.to_identifier(RECORD_ALIASES[unqualified_record])
                column.replace(exp.Dot.build([alias, *(part.copy() for part in column.parts)]))
        elif name in other_lookups and len(column.parts) > 1:
            raise TransformError(
                text.where, f"`{column.sql(dialect=DIALECT)}`: lookup {name!r} cannot be used here "
                f"(a rule may use the lookups it joins, in key, value and a stateless rule's where)", text.sql
            )
        else:
            names = ", ".join(f"{a}." for a in (*allowed, *lookups))
            if unqualified_ok:
                names += ", or the input's own " + ", ".join(RAW_COLUMNS)
            raise TransformError(
                text.where, f"`{column.sql(dialect=DIALECT)}` does not name a record field: start it with {names}", text.sql
            )
    return tree


def render(tree: exp.Expression) -> str:
    """Spark SQL with every identifier quoted."""
    return tree.sql(dialect=DIALECT, identify=True)


def expression(text: Text, allowed: tuple[str, ...], unqualified_ok: bool = False,
               lookups: tuple[str, ...] = (), other_lookups: tuple[str, ...] = (),
               unqualified_record: str | None = None) -> exp.Expression:
    return qualify_records(parse(text), allowed, text, unqualified_ok, lookups, other_lookups, unqualified_record)


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


def lookup_keys(text: Text, lookup: str, records: tuple[str, ...]) -> list[tuple[exp.Expression, exp.Expression]]:
    """Split a lookup join's `on` into (lookup expression, record expression) pairs.

    It must be an equality or a conjunction of equalities, each comparing an
    expression over the lookup's columns alone with one over the rule's records
    (`in.`, or `left.`/`right.`) alone, in either order.
    """
    tree = expression(text, records, lookups=(lookup,))
    conjuncts = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
    alias = lookup_alias(lookup)
    pairs = []
    for conjunct in conjuncts:
        if not isinstance(conjunct, exp.EQ):
            raise TransformError(text.where, f"a lookup join's on must be an equality (or equalities joined with AND), "
                                 f"e.g. {lookup}.name = in.value.after.customer", text.sql)
        lookup_side = record_side = None
        for operand in (conjunct.left, conjunct.right):
            roots = {_first_part(c).name for c in operand.find_all(exp.Column)}
            if roots == {alias}:
                lookup_side = operand
            elif roots and alias not in roots:
                record_side = operand
        if lookup_side is None or record_side is None:
            names = " or ".join(f"{r}." for r in records)
            raise TransformError(text.where, f"each equality of a lookup join's on compares {lookup}. columns with an "
                                 f"expression over {names}", text.sql)
        pairs.append((lookup_side, record_side))
    return pairs


def named_struct(fields: dict[str, exp.Expression]) -> exp.Expression:
    """Spark's named_struct('a', <a>, 'b', <b>) for a key or nested value mapping."""
    args: list[exp.Expression] = []
    for name, value in fields.items():
        args += [exp.Literal.string(name), value]
    return exp.Anonymous(this="named_struct", expressions=args)
