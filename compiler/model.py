"""An output model as sqlglot trees, and the dbt model file that shows them.

Each rule becomes one CTE that reads as an ordinary select or join: the
rule's own `where`, join condition and projection as plain SQL, beside the
little machinery every rule shares (which records it consumed, the order it
is emitted in, "not taken by an earlier rule", and a denorm's pairing
order). Every tree is rendered by `render`, with one style; the model file
around them holds only dbt's parts: config, the import CTEs (each input's
pending records, each lookup's ref()), the struct guards, and the
`zync_output_rows` machinery, which the file's last `select` reads.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from functools import reduce

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from compiler import expressions as sql
from compiler.properties import SOURCE_NAME
from compiler.spec import Rule, Shape, Text, Transform
from zync.tables import raw_table_name, snake
from zync.transactions import OUTPUT_TRANSACTION_COLUMN

# The one style of every SQL text the compiler writes: lower-case keywords and function names, as the
# macros (and dbt's own style guide) write them; every identifier quoted.
RENDER_OPTIONS = {"dialect": sql.DIALECT, "pretty": True, "identify": True, "pad": 4, "indent": 4,
                  "normalize_functions": "lower", "max_text_width": 120}
# Tokens render() leaves as sqlglot wrote them: names and literals (what they say is data, not style).
_AS_WRITTEN = {TokenType.IDENTIFIER, TokenType.NUMBER}
# A dbt call in a tree (jinja()): its text is dbt's, passed through untouched.
_JINJA = re.compile(r"\{\{.*?\}\}", re.S)
IN, LEFT, RIGHT = (sql.RECORD_ALIASES[n] for n in ("in", "left", "right"))
EVENTS = "events"
OUTPUT_ROWS = "zync_output_rows"  # the last CTE of the zync_output_rows macro
TAKEABLE_COLUMN = "zync_takeable"

# rule index -> the fields of its value, for rules whose value is one struct expression
StructFields = dict[int, list[str]]


def render(tree: exp.Expression) -> str:
    """A tree as the model file shows it.

    sqlglot writes keywords upper case and has no setting for it, so the
    rendered text's keyword tokens are lowered here, found by sqlglot's own
    tokenizer (names, literals and dbt's {{ ... }} calls are left as written).
    """
    text = tree.sql(**RENDER_OPTIONS)
    jinja = [m.span() for m in _JINJA.finditer(text)]
    pieces, done = [], 0
    for token in Dialect.get_or_raise(sql.DIALECT).tokenize(text):
        if (token.token_type in _AS_WRITTEN or token.token_type.name.endswith("STRING")
                or any(start <= token.start < end for start, end in jinja)):
            continue
        pieces += [text[done:token.start], text[token.start:token.end + 1].lower()]
        done = token.end + 1
    return "".join(pieces) + text[done:]


def input_cte(topic: str) -> str:
    """The import CTE of an input's pending records."""
    return snake(topic) or "input"


def takeable_cte(topic: str) -> str:
    return f"{input_cte(topic)}_takeable"


def rule_cte(rule: Rule) -> str:
    return f"rule_{rule.index}"


def records(rule: Rule) -> tuple[str, ...]:
    """The names a rule's expressions give its records."""
    return ("left", "right") if rule.kind == "denorm" else ("in",)


def path(*names: str) -> exp.Expression:
    """A column path, e.g. path('in_record', 'kafka', 'offset')."""
    head: exp.Expression = exp.column(names[1], table=names[0]) if len(names) > 1 else exp.column(names[0])
    return exp.Dot.build([head, *map(exp.to_identifier, names[2:])]) if len(names) > 2 else head


def table(name: str, alias: str | None = None) -> exp.Table:
    relation = exp.Table(this=exp.to_identifier(name))
    return relation.as_(alias) if alias and alias != name else relation


def jinja(expression: str) -> exp.Var:
    """A macro call or ref() in the tree, rendered as written, e.g. {{ ref('customers') }}."""
    return exp.Var(this=f"{{{{ {expression} }}}}")


def jinja_table(expression: str) -> exp.Table:
    """A relation dbt names at run time, e.g. {{ ref('customers') }}."""
    return exp.Table(this=jinja(expression))


def is_not_null(tree: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Is(this=tree, expression=exp.Null()))


def string_array(values: list[str]) -> exp.Expression:
    return exp.Array(expressions=[exp.Literal.string(v) for v in values])


def coordinates(alias: str) -> exp.Expression:
    """The Kafka coordinates of a record (macros/etl/order/zync_coordinates.sql): its identity in done rows."""
    return jinja(f"zync_coordinates({alias!r})")


def ordering(alias: str, transactions: tuple[str, ...] = ()) -> exp.Expression:
    """The emission order of an event, from its driving record (macros/etl/order/zync_ordering.sql); with
    `transactions` (its records' aliases, for an output taking whole source transactions) its source
    transaction first."""
    if transactions:
        return jinja(f"zync_ordering({alias!r}, transactions={list(transactions)!r})")
    return jinja(f"zync_ordering({alias!r})")


# The fields of a Debezium change an output taking whole source transactions reads of every input record
# (macros/etl/order/zync_source_transaction.sql): its transaction's id and its place in the transaction.
TRANSACTION_READS = ("value.transaction.id", "value.transaction.total_order")
TRANSACTION_COLUMN = OUTPUT_TRANSACTION_COLUMN


def union_all(queries: list[exp.Query]) -> exp.Query:
    return reduce(lambda a, b: exp.union(a, b, distinct=False), queries)


@dataclass(frozen=True)
class CompiledRule:
    """One rule's expressions, parsed and checked once, with record names rewritten to the model's aliases."""

    rule: Rule
    key: exp.Expression | None
    value: exp.Expression | dict[str, exp.Expression] | None  # one struct expression, field -> expression, or none
    condition: exp.Expression | None  # the rule's `where`
    join_on: exp.Expression | None
    join_keys: list[tuple[exp.Expression, exp.Expression]]  # (left, right) pairs of join_on
    lookups: list[tuple[str, exp.Expression, list[exp.Expression]]]  # (lookup, on, lookup-side keys)
    takeable: dict[str, exp.Expression | None]  # side -> the rule's test of a record of that side (None: any)


def _shape(shape: Shape, rule: Rule, lookups: tuple[str, ...]) -> exp.Expression:
    """A key or value as one expression: a mapping becomes a named_struct, a field written as null is null."""
    if isinstance(shape, Text):
        return sql.expression(shape, records(rule), lookups=lookups)
    if shape is None:
        return exp.Null()
    return sql.named_struct({name: _shape(sub, rule, lookups) for name, sub in shape.items()})


def _as_in_record(tree: exp.Expression) -> exp.Expression:
    """The expression with every record alias (`left_record`, `right_record`) renamed `in_record`."""
    tree = tree.copy()
    for column in tree.find_all(exp.Column):
        root = column.parts[0]
        if root.name in sql.RECORD_ALIASES.values():
            root.replace(exp.to_identifier(IN))
    return tree


def compile_rule(rule: Rule) -> CompiledRule:
    """Parse and check every expression of a rule (errors name its YAML line)."""
    lookups = tuple(j.lookup for j in rule.joins)
    stateless = rule.kind == "stateless"
    condition = None
    if rule.condition is not None:
        condition = sql.expression(
            rule.condition, ("in",) if stateless else (), unqualified_ok=True,
            lookups=lookups if stateless else (), other_lookups=() if stateless else lookups,
            # beside a lookup's columns, a bare `value.op` could be ambiguous: it means the input's
            unqualified_record="in" if stateless and rule.joins else None,
        )
    join_on = sql.expression(rule.join_on, ("left", "right")) if rule.join_on is not None else None
    join_keys = sql.join_keys(rule.join_on) if rule.join_on is not None else []
    joined = []
    for join in rule.joins:
        on = sql.expression(join.on, records(rule), lookups=(join.lookup,))
        joined.append((join.lookup, on, [k for k, _ in sql.lookup_keys(join.on, join.lookup, records(rule))]))
    value: exp.Expression | dict[str, exp.Expression] | None
    if isinstance(rule.value, Text):
        value = _shape(rule.value, rule, lookups)
    elif isinstance(rule.value, dict):
        # a field written as null is null (and still among the fields the row carries)
        value = {name: _shape(shape, rule, lookups) for name, shape in rule.value.items()}
    else:
        value = None
    # What the rule asks of a record of each side, as SQL over `in_record` (zync_records reads it so).
    takeable: dict[str, exp.Expression | None] = {}
    for side in records(rule):
        terms: list[exp.Expression] = []
        if condition is not None:
            if stateless and rule.joins:
                takeable[side] = None  # a `where` that reads a lookup is taken to admit anything
                continue
            terms.append(condition)
        if not stateless:
            terms += [is_not_null(pair[0 if side == "left" else 1]) for pair in join_keys]
        takeable[side] = exp.and_(*(_as_in_record(t) for t in terms)) if terms else None
    key = _shape(rule.key, rule, lookups) if rule.key is not None else None
    return CompiledRule(rule, key, value, condition, join_on, join_keys, joined, takeable)


def _projection(compiled: CompiledRule, value_fields: list[str], struct_fields: StructFields) -> list[exp.Expression]:
    """key, value__<field> for every field of the output (null where the rule writes none), and fields."""
    rule = compiled.rule
    columns = [exp.alias_(compiled.key if compiled.key is not None else exp.Null(), "key")]
    value = compiled.value
    if isinstance(value, exp.Expression):
        # One struct: each field is read from it, and a record whose struct is null is a tombstone.
        names = struct_fields[rule.index]
        for name in value_fields:
            field = exp.Dot(this=value.copy(), expression=exp.to_identifier(name)) if name in names else exp.Null()
            columns.append(exp.alias_(field, f"value__{name}"))
        fields: exp.Expression = exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null(),
                                        false=string_array(names))
    else:
        for name in value_fields:
            field = value.get(name) if value is not None else None
            columns.append(exp.alias_(field.copy() if field is not None else exp.Null(), f"value__{name}"))
        fields = exp.cast(exp.Null(), "ARRAY<STRING>") if value is None else string_array(list(value))
    columns.append(exp.alias_(fields, "fields"))
    return columns


def _not_consumed_by(query: exp.Select, alias: str, earlier: list[str]) -> exp.Select:
    """Drop the records an earlier rule (a CTE with a `consumed` array) already took: each record makes at
    most one event."""
    if not earlier:
        return query
    consumed = union_all([
        exp.select(exp.alias_(exp.Explode(this=exp.column("consumed")), "record")).from_(table(name))
        for name in earlier
    ])
    on = exp.and_(*(exp.EQ(this=path(alias, "kafka", n), expression=path("consumed_before", "record", n))
                    for n in ("topic", "partition", "offset")))
    return query.join(exp.Subquery(this=consumed, alias=exp.TableAlias(this=exp.to_identifier("consumed_before"))),
                      on=on, join_type="left anti")


def _not_a_replay(alias: str) -> exp.Expression:
    """A replay of an earlier record (zync_replays) takes part in no event."""
    return exp.Is(this=path(alias, "zync_replay_of"), expression=exp.Null())


def lookup_cte(name: str) -> str:
    return sql.lookup_alias(name)


def _lookup_joins(query: exp.Select, compiled: CompiledRule, transform: Transform) -> tuple[exp.Select, list[exp.Expression]]:
    """Left join each lookup on its `on`; return the query and a guard per lookup that fails the run when a
    record matches several of its rows (the record would make several events: macros/etl/checks/zync_lookup_row_is_unique.sql)."""
    refs = {lookup.name: lookup.ref for lookup in transform.lookups}
    record = LEFT if compiled.rule.kind == "denorm" else IN
    guards = []
    for name, on, keys in compiled.lookups:
        alias = sql.lookup_alias(name)
        rows = exp.select(
            exp.Column(this=exp.Star(), table=exp.to_identifier(alias)),
            exp.alias_(exp.Window(this=exp.Count(this=exp.Star()), partition_by=[k.copy() for k in keys]),
                       "zync_lookup_matches"),
        ).from_(table(lookup_cte(name), alias))
        query = query.join(exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier(alias))),
                           on=on.copy(), join_type="left")
        guards.append(jinja(f"zync_lookup_row_is_unique({alias!r}, {name!r}, {refs[name]!r}, {record!r})"))
    return query, guards


def _pairable(compiled: CompiledRule, side: str, earlier: list[str]) -> exp.Subquery:
    """One side of a denorm: its candidate records, numbered in offset order within their join key, so that
    the n-th left record pairs with the n-th right one (one to one; an unmatched record waits)."""
    rule = compiled.rule
    alias = LEFT if side == "left" else RIGHT
    keys = [pair[0 if side == "left" else 1].copy() for pair in compiled.join_keys]
    order = exp.Order(expressions=[exp.Ordered(this=path(alias, "kafka", n), nulls_first=True)
                                   for n in ("partition", "offset")])
    query = exp.select(
        exp.Column(this=exp.Star(), table=exp.to_identifier(alias)),
        exp.alias_(exp.Window(this=exp.RowNumber(), partition_by=keys, order=order), "zync_pair"),
    ).from_(table(input_cte(rule.inputs[0 if side == "left" else 1]), alias))
    query = _not_consumed_by(query, alias, earlier)
    conditions = [_not_a_replay(alias)]
    if compiled.condition is not None:
        conditions.append(compiled.condition.copy())
    return exp.Subquery(this=query.where(exp.and_(*conditions)), alias=exp.TableAlias(this=exp.to_identifier(alias)))


def rule_query(compiled: CompiledRule, transform: Transform, earlier: list[str], value_fields: list[str],
               struct_fields: StructFields) -> exp.Select:
    """A rule as one query: one row per transformation event, with the records it consumed and its order."""
    rule = compiled.rule
    projection = _projection(compiled, value_fields, struct_fields)
    whole = transform.whole_transactions
    if rule.kind == "denorm":
        assert compiled.join_on is not None
        query = exp.select(
            exp.alias_(exp.Array(expressions=[coordinates(LEFT), coordinates(RIGHT)]), "consumed"),
            exp.alias_(ordering(LEFT, (LEFT, RIGHT) if whole else ()), "ordering"), *projection,
        ).from_(_pairable(compiled, "left", earlier))
        pair = exp.EQ(this=path(LEFT, "zync_pair"), expression=path(RIGHT, "zync_pair"))
        query = query.join(_pairable(compiled, "right", earlier), on=exp.and_(compiled.join_on.copy(), pair),
                           join_type="inner")
        query, guards = _lookup_joins(query, compiled, transform)
        return query.where(exp.and_(*guards)) if guards else query
    query = exp.select(
        exp.alias_(exp.Array(expressions=[coordinates(IN)]), "consumed"),
        exp.alias_(ordering(IN, (IN,) if whole else ()), "ordering"),
        *projection,
    ).from_(table(input_cte(rule.inputs[0]), IN))
    query = _not_consumed_by(query, IN, earlier)
    query, guards = _lookup_joins(query, compiled, transform)
    conditions = [_not_a_replay(IN), *guards]
    if compiled.condition is not None:
        conditions.append(compiled.condition.copy())
    return query.where(exp.and_(*conditions))


def takeable_query(topic: str, compiled: list[CompiledRule]) -> exp.Select:
    """An input's pending records, each with whether some rule could ever take it.

    A record no rule can take (a Debezium tombstone, an op no `where` admits,
    a denorm candidate whose join key is null) would wait forever and hold
    back every later record of its key; zync_records marks it done as
    `skipped` instead.
    """
    conditions: list[exp.Expression] = []
    anything = False
    for c in compiled:
        for side, name in zip(records(c.rule), c.rule.inputs):
            if name != topic:
                continue
            if c.takeable[side] is None:
                anything = True
            else:
                conditions.append(c.takeable[side])
    if anything:
        takeable: exp.Expression = exp.true()
    elif not conditions:
        takeable = exp.false()
    else:
        takeable = exp.func("coalesce", exp.or_(*(t.copy() for t in conditions)), exp.false())
    return exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier(IN)),
                      exp.alias_(takeable, TAKEABLE_COLUMN)).from_(table(input_cte(topic), IN))


def _record_paths(tree: exp.Expression, record_topics: dict[str, list[str]]) -> dict[str, set[str]]:
    """{input topic: the field paths of its records that `tree` reads}, e.g. {'Invoices': {'value.after.ID'}}.

    record_topics maps each record alias (`left_record`, ...) and, for a bare
    `value.op` in a `where`, each raw column name, to the inputs it may mean.
    """
    found: dict[str, set[str]] = {}
    for column in tree.find_all(exp.Column):
        parts = sql.column_path(column)
        topics = record_topics.get(parts[0], [])  # none for a lookup's column
        if parts[0] not in sql.RAW_COLUMNS:
            parts = parts[1:]  # `left_record`.`value`... reads the record's `value`...
        for topic in topics:
            found.setdefault(topic, set()).add(".".join(parts))
    return found


def input_reads(transform: Transform, compiled: list[CompiledRule]) -> dict[str, list[str]]:
    """{input topic: the field paths of its records some rule reads}, shortest first, a path below another left out.

    zync_pending types (Debezium's semantic types, defaults) only these paths:
    a column no rule reads is carried as written, so it costs the plan
    nothing and a value of it no Spark type holds never stops the output.
    The key is always read whole: per-key order compares records by it.
    """
    reads: dict[str, set[str]] = {item.topic: {"key", *(TRANSACTION_READS if transform.whole_transactions else ())}
                                  for item in transform.inputs}
    for c in compiled:
        aliases = dict(zip((sql.RECORD_ALIASES[r] for r in records(c.rule)), ([t] for t in c.rule.inputs)))
        # a bare `value.op` in a denorm's `where` is asked of both sides' records
        bare = {name: list(c.rule.inputs) if c.rule.kind == "denorm" else [c.rule.inputs[0]] for name in sql.RAW_COLUMNS}
        trees: list[exp.Expression] = [t for t in (c.key, c.condition, c.join_on) if t is not None]
        trees += [on for _, on, _ in c.lookups]
        if isinstance(c.value, exp.Expression):
            trees.append(c.value)
        elif isinstance(c.value, dict):
            trees += c.value.values()
        for tree in trees:
            for topic, paths in _record_paths(tree, {**bare, **aliases}).items():
                reads[topic] |= paths
    kept: dict[str, list[str]] = {}
    for topic, paths in reads.items():
        ordered = sorted(paths, key=lambda p: (p.count("."), p.lower()))
        kept[topic] = [p for p in ordered if not any(p.lower().startswith(q.lower() + ".") for q in ordered if q != p)]
    return kept


def _cte(name: str, body: str, comments: list[str]) -> str:
    lines = [f"-- {c}" for c in comments]
    return "\n".join([*lines, f"{name} as (", textwrap.indent(body, "    "), ")"])


def _struct_check(rule: Rule, transform: Transform, struct_fields: StructFields, where: str) -> str:
    """A run-time guard for a struct value: its fields must still be those compiled in (the raw schema may evolve)."""
    if not isinstance(rule.value, Text):
        return ""
    names = sql.field_path(sql.parse(rule.value)) or []
    relation = {i.topic: i.table for i in transform.inputs}[dict(zip(records(rule), rule.inputs))[names[0]]]
    return (f"{{%- do zync_expect_struct_fields(source({SOURCE_NAME!r}, {relation!r}), {names[1:]!r}, "
            f"{struct_fields[rule.index]!r}, {f'transform {rule.index} ({where})'!r}) %}}\n")


def _title(rule: Rule, where: str, condition: Text | None) -> list[str]:
    if rule.kind == "denorm":
        left, right = rule.inputs
        notes = [f"transform {rule.index} ({where}): denorm {left} with {right}",
                 f"(zync_pair: the n-th pending {left} record of a join key pairs with the n-th {right} one)"]
    else:
        notes = [f"transform {rule.index} ({where}): stateless {rule.inputs[0]}, one event per pending record"]
    if condition is not None:
        notes.append(f"where: {condition.sql}")
    return notes


def _transaction_ends(transform: Transform, item) -> str:
    """zync_pending's `transactions` argument for an input of an output taking whole source transactions: where
    its records' transactions' ENDs are (macros/etl/order/zync_transaction_ends.sql)."""
    if not transform.whole_transactions:
        return ""
    ends = f"source({SOURCE_NAME!r}, {raw_table_name(item.transactions)!r})"
    return f",\n    transactions={{'ends': {ends}, 'topic': {item.transactions!r}}}"


def render_model_body(transform: Transform, compiled: list[CompiledRule], value_fields: list[str],
                      struct_fields: StructFields) -> str:
    """Everything after the model's config: the CTEs and the final select of the output rows."""
    ctes = []
    reads = input_reads(transform, compiled)
    for item in transform.inputs:
        ctes.append(_cte(
            input_cte(item.topic),
            f"{{{{ zync_pending(source({SOURCE_NAME!r}, {item.table!r}), {item.topic!r}, zync,\n"
            f"    reads={reads[item.topic]!r}{_transaction_ends(transform, item)}) }}}}",
            [f"pending {item.topic} records: past the cursor, not yet done for this output;",
             "the fields the rules read typed (Debezium's types), the others as written"]))
    used = {join.lookup for rule in transform.rules for join in rule.joins}
    for lookup in transform.lookups:
        if lookup.name in used:
            ctes.append(_cte(lookup_cte(lookup.name), render(exp.select(exp.Star()).from_(jinja_table(f"ref({lookup.ref!r})"))),
                             [f"lookup {lookup.name} ({lookup.where.path.name}:{lookup.where.line}): read whole on every run"]))
    for n, c in enumerate(compiled):
        rule = c.rule
        earlier = [rule_cte(r) for r in transform.rules[:n] if set(r.inputs) & set(rule.inputs)]
        where = f"{transform.path.name}:{rule.where.line}"
        check = _struct_check(rule, transform, struct_fields, where)
        body = render(rule_query(c, transform, earlier, value_fields, struct_fields))
        ctes.append(check + _cte(rule_cte(rule), body, _title(rule, where, rule.condition)))
    events = union_all([exp.select(exp.Star()).from_(table(rule_cte(r))) for r in transform.rules])
    ctes.append(_cte(EVENTS, render(events), ["every transformation event of this run, one row each"]))
    for item in transform.inputs:
        ctes.append(_cte(takeable_cte(item.topic), render(takeable_query(item.topic, compiled)), [
            f"whether some rule could ever take each pending {item.topic} record: one none can (a tombstone, an op",
            "no `where` admits, a null join key) is done at once as `skipped`, not left to hold back its key"]))
    inputs = ",\n".join(
        f"        {{'cte': {takeable_cte(i.topic)!r}, 'expire_after': "
        f"{repr(i.expire_after.as_macro_arg()) if i.expire_after else 'none'}}}"
        for i in transform.inputs
    )
    machinery = (
        "-- per-key order, expiry, the cursors and output offsets: the rows this run appends\n"
        f"{{{{ zync_output_rows(\n    {EVENTS!r},\n    inputs=[\n{inputs}\n    ],\n"
        f"    output_topic={transform.output_topic!r},\n    value_fields={value_fields!r},\n    state=zync,\n"
        + (f"    transactions={transform.transaction_topic!r},\n" if transform.whole_transactions else "") + ") }}"
    )
    value = exp.Case(ifs=[exp.If(this=is_not_null(exp.column("fields")),
                                 true=sql.named_struct({f: exp.column(f"value__{f}") for f in value_fields}))])
    final = exp.select(
        *map(exp.column, ("kafka", "kind", "key")), exp.alias_(value, "value"),
        *map(exp.column, ("fields", "status", "run_id")),
        *([exp.column(TRANSACTION_COLUMN)] if transform.whole_transactions else []),
    ).from_(table(OUTPUT_ROWS))
    return "\n".join([
        "with",
        "",
        ",\n\n".join(ctes) + ",",
        "",
        machinery,
        "",
        "-- out rows (key, value, the fields they carry), done rows (status) and cursor rows",
        render(final),
        "",
    ])
