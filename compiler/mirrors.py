r"""Mirror files: `mirrors:` YAML -> one current-state dbt model (merge-on-read view over a Delta base) per mirror.

A mirror file holds only a top-level `mirrors:` list. Each entry names a raw
CDC table, how to key it, how to treat deletes and which columns to keep:

    mirrors:
      - model: invoices_mirror          # the dbt model (a view; its Delta table is <model>__base)
        topic: Invoices                 # the Kafka topic whose raw table it reads
        table: raw_invoices             # that raw table (default: raw_<topic in snake case>)
        delete: soft                    # hard (row removed, the default) or soft (row flagged)
        primary-key: [ID]               # key fields, or {name: SQL}; default: every Kafka key field
        source-ts: value.source.ts_ms   # source time of a change (the re-snapshot guard); default:
                                        # value.source.ts_ms, else value.ts_ms, if the raw value has it
        columns:                        # optional; default: every field of value.after
          customer: value.after.customer
        types:                          # optional, with the default columns: a Spark type per field
          discount: string              # (string keeps an unconstrained numeric's exact text)
        pool: raw_pool                  # optional: the topic's records go to this raw pool, shared by
                                        # many topics (one commit a cycle for all; ingest/pool.py), and
                                        # its raw table is a view over the pool
        history: true                   # optional: also a history model, <model>_history (one row per
                                        # version of each key, SCD type 2; macros/history/)
        hard_deletes: invalidate        # with history: a delete closes the key's last version
                                        # (invalidate, the default) or adds a deleted version (new_record)

An entry may name many topics at once, e.g. every table of a Debezium
connector, with a regular expression instead of one topic:

      - topics: 'pg\.public\..*'      # every topic it fully matches gets a mirror
        name: '{table}_mirror'          # the model's name (default '{table}'), see TopicParts
        delete: hard                    # delete, source-ts, types, pool, history and hard_deletes as above

Each matching topic gets a mirror with the defaults (primary key from the
Kafka key, columns from value.after, raw table raw_<topic in snake case>).
A topic named by a single-topic entry takes that entry instead. The topics
are the broker's, listed when the file compiles (expand_patterns), plus those
an earlier compile generated a mirror for, so a topic that disappears keeps
its mirror. `zync run` compiles again when a new topic matches.

Expressions are Spark SQL over the raw row's own columns (`kafka`, `key`,
`value`), parsed, checked and re-rendered with every identifier quoted by
sqlglot, like the transforms' `where`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from sqlglot import exp

from compiler import expressions as sql
from compiler.model import is_not_null, jinja, jinja_table, path, render
from compiler.properties import GENERATED, SOURCE_NAME
from compiler.spec import (
    IDENTIFIER_PATTERN,
    Input,
    Text,
    TransformError,
    Where,
    _check_keys,
    _identifier,
    _require,
    _topic,
    _where,
    consistency_of as _consistency,
    pool_of as _pool,
    read_yaml,
)
from zync.ingest_options import SafeLoader
from zync.tables import raw_table_name, snake
from zync.transactions import connector_prefix, transaction_topic

MODELS_FOLDER = Path("models") / "mirrors"
DELETE_MODES = ("hard", "soft")
# The settings each kind of entry takes (docs/reference/mirror-yaml.md has a table of each).
MIRROR_KEYS = frozenset({"model", "topic", "table", "delete", "primary-key", "source-ts", "columns", "types", "pool",
                         "consistency", "transactions", "history", "hard_deletes"})
PATTERN_KEYS = frozenset({"topics", "name", "delete", "source-ts", "types", "pool", "consistency", "transactions",
                          "history", "hard_deletes"})
# `hard_deletes:` of an entry with `history: true` (dbt 1.9's snapshot vocabulary): a delete closes its key's
# last version (invalidate, the default) or also adds a version of its own, the row as deleted (new_record).
HARD_DELETES = ("invalidate", "new_record")
# A mirror's history model is named <mirror>HISTORY_SUFFIX.
HISTORY_SUFFIX = "_history"
# Columns the mirror adds itself; user columns may not start with this prefix.
RESERVED_PREFIX = "_zync_"
# The model's struct of value.after's fields, typed, when `columns` is left to the default (macros/mirror/).
AFTER_COLUMN = "_zync_after"
# The Jinja variable a model whose key and value.after are both defaults reads the raw table's field notes
# into, once for both macros (each would read them itself).
NOTES_VARIABLE = "raw_notes"
# The Jinja variable a model whose key and source time are both defaults describes the raw table's columns
# into, once for both macros: the key's names and the source time are read from the types it holds.
COLUMNS_VARIABLE = "raw_columns"
# The properties' meta naming the `topics:` expression a mirror was made from (previous_pattern_topics).
PATTERN_META = "zync_mirror_pattern"
# Debezium's ops a mirror applies (a tombstone or any other op is no change of the row).
CHANGE_OPS = ("c", "r", "u", "d")


@dataclass(frozen=True)
class Mirror:
    model: str
    topic: str
    table: str
    delete: str
    primary_key: tuple[tuple[str, Text], ...] | None  # None: every field of the Kafka key, found at run time
    columns: tuple[tuple[str, Text], ...] | None  # None: every field of value.after, found at run time
    source_ts: Text | None  # None: value.source.ts_ms, else value.ts_ms, else unknown (found at run time)
    where: Where
    types: tuple[tuple[str, str], ...] = ()  # (field of value.after, Spark type) for the default columns
    pattern: str | None = None  # the `topics:` expression of the entry it was made from, if any
    pool: str | None = None  # the raw pool holding the topic's records (its raw table then a view), if any
    # `consistency: transaction`: its connector's transaction topic, whose cut its raw view stops at (zync/transactions.py)
    transactions: str | None = None
    # `history: true`: the mirror also has a history model (history_model_name); hard_deletes as HARD_DELETES says
    history: bool = False
    hard_deletes: str = "invalidate"

    @property
    def models(self) -> tuple[str, ...]:
        """The models the entry makes: the mirror, and its history model if it keeps one."""
        return (self.model, history_model_name(self.model)) if self.history else (self.model,)


def history_model_name(mirror_model: str) -> str:
    """The name of a mirror's history model: `<mirror>_history`."""
    return mirror_model + HISTORY_SUFFIX


# The placeholders a pattern entry's `name:` template may use besides its expression's named groups.
NAME_PLACEHOLDERS = ("topic", "server", "schema", "table")
DEFAULT_NAME = "{table}"


def topic_parts(topic: str) -> dict[str, str]:
    """A topic's parts for a `name:` template, each in snake case.

    Debezium names a table's topic <topic prefix>.<schema>.<table>: {server} is
    the part before the first dot, {table} the part after the last one,
    {schema} the part before that (empty for a topic of fewer than three
    parts), {topic} the whole topic.
    """
    parts = topic.split(".")
    return {"topic": snake(topic), "server": snake(parts[0]) if len(parts) > 1 else "",
            "schema": snake(parts[-2]) if len(parts) > 2 else "", "table": snake(parts[-1])}


@dataclass(frozen=True)
class MirrorPattern:
    """An entry naming many topics (`topics:`, a regular expression): one mirror per matching topic."""

    topics: re.Pattern
    name: str  # the model name template
    delete: str
    source_ts: Text | None
    types: tuple[tuple[str, str], ...]
    where: Where
    pool: str | None = None
    consistency: str = "topic"
    transactions: str | None = None  # the transaction topic `transactions:` names, if it does
    history: bool = False
    hard_deletes: str = "invalidate"

    def model_name(self, topic: str) -> str:
        """The model name of a matching topic's mirror; a TransformError if it is not a plain SQL name."""
        match = self.topics.fullmatch(topic)
        values = {**topic_parts(topic), **{k: snake(v or "") for k, v in (match.groupdict() if match else {}).items()}}
        name = self.name.format(**values)
        if not IDENTIFIER_PATTERN.match(name):
            raise TransformError(self.where, f"mirror name {name!r}, made from topic {topic!r} by name: "
                                 f"{self.name!r}, is not a plain SQL name (letters, digits, _): change the template")
        return name

    def mirror(self, topic: str) -> Mirror:
        transactions = (self.transactions or transaction_topic(connector_prefix(topic))
                        if self.consistency == "transaction" else None)
        return Mirror(self.model_name(topic), topic, raw_table_name(topic), self.delete, None, None,
                      self.source_ts, self.where, self.types, pattern=self.topics.pattern, pool=self.pool,
                      transactions=transactions, history=self.history, hard_deletes=self.hard_deletes)


@dataclass(frozen=True)
class MirrorFile:
    path: Path
    mirrors: tuple[Mirror, ...]
    patterns: tuple[MirrorPattern, ...] = ()  # not expanded yet: see expand_patterns

    @property
    def reads(self) -> tuple[tuple[str, Input], ...]:
        """(model, input) for every raw table the mirrors read, as compiler.properties lists sources."""
        return tuple((m.model, Input(m.topic, m.table, m.where, pool=m.pool, transactions=m.transactions))
                     for m in self.mirrors)


def expand_patterns(files: list[MirrorFile], topics: Iterable[str]) -> list[MirrorFile]:
    """The files with every pattern entry replaced by one mirror per topic it matches.

    A topic a single-topic entry names (in any file) takes that entry, not a
    pattern's; a topic two patterns match takes the first (in file order).
    Two topics whose mirrors would have one name are refused, naming both.
    """
    explicit = {m.topic for f in files for m in f.mirrors}
    claimed: dict[str, MirrorPattern] = {}
    names: dict[str, tuple[str, Where]] = {name: (m.topic, m.where) for f in files for m in f.mirrors for name in m.models}
    expanded = []
    for f in files:
        made = []
        for pattern in f.patterns:
            for topic in sorted(set(topics)):
                if topic in explicit or topic in claimed or not pattern.topics.fullmatch(topic):
                    continue
                claimed[topic] = pattern
                mirror = pattern.mirror(topic)
                for name in mirror.models:
                    if name in names:
                        other, where = names[name]
                        made_as = "be mirrored as" if name == mirror.model else "make the history model"
                        raise TransformError(pattern.where, f"topics {other!r} and {topic!r} would both {made_as} "
                                             f"{name!r} (the other at {where}): give this entry a `name:` "
                                             "template that tells them apart, e.g. '{schema}_{table}' or '{topic}', "
                                             "or name one topic in an entry of its own")
                for name in mirror.models:
                    names[name] = (topic, pattern.where)
                made.append(mirror)
        expanded.append(replace(f, mirrors=f.mirrors + tuple(made), patterns=()))
    return expanded


def is_mirror_file(path: Path) -> bool:
    """Whether a file under transforms/ is a mirror file (its top level has `mirrors:`)."""
    raw = read_yaml(path)
    return isinstance(raw, dict) and "mirrors" in raw


def _named_expressions(path: Path, entry: dict, key: str, what: str, list_root: str | None) -> tuple[tuple[str, Text], ...]:
    """A mapping name -> SQL, or (if list_root) a list of field names meaning `<list_root>.<name>`."""
    value = entry[key]
    where = _where(path, entry, key)
    pairs: list[tuple[str, Text]] = []
    if isinstance(value, list) and list_root is not None:
        for name in value:
            if not isinstance(name, str) or not IDENTIFIER_PATTERN.match(name):
                raise TransformError(where, f"{what}: {name!r} is not a plain field name", f"{key}: {value!r}")
            pairs.append((name, Text(f"{list_root}.{name}", where)))
    elif isinstance(value, dict):
        for name, expr in value.items():
            name_where = _where(path, value, str(name))
            if not isinstance(name, str) or not IDENTIFIER_PATTERN.match(name):
                raise TransformError(name_where, f"{what}: column name {name!r} is not a plain name (letters, digits, _)")
            if not isinstance(expr, (str, int, float)) or isinstance(expr, bool):
                raise TransformError(name_where, f"{what}.{name}: expected a SQL expression", repr(expr))
            pairs.append((name, Text(str(expr), name_where)))
    else:
        forms = "a list of key field names or a mapping name: SQL" if list_root else "a mapping name: SQL"
        raise TransformError(where, f"{what}: expected {forms}", f"{key}: {value!r}")
    if not pairs:
        raise TransformError(where, f"{what}: empty; leave `{key}` out for the default")
    for name, text in pairs:
        if name.lower().startswith(RESERVED_PREFIX):
            raise TransformError(text.where, f"{what}: {name!r} starts with {RESERVED_PREFIX!r}, which the mirror keeps for itself")
    return tuple(pairs)


def _delete_mode(path: Path, raw: dict, what: str) -> str:
    delete = raw.get("delete", "hard")
    if delete not in DELETE_MODES:
        raise TransformError(_where(path, raw, "delete"), f"{what}: delete must be hard or soft", f"delete: {delete!r}")
    return delete


def _source_ts(path: Path, raw: dict, what: str) -> Text | None:
    if "source-ts" not in raw:
        return None
    return Text(str(_require(path, raw, "source-ts", str, what)), _where(path, raw, "source-ts"))


def _pattern(path: Path, raw: dict, what: str) -> MirrorPattern:
    """A `topics:` entry: checked here, expanded against the broker's topics by expand_patterns."""
    _check_keys(path, raw, PATTERN_KEYS, what + " (an entry with `topics:`)")
    text = str(_require(path, raw, "topics", str, what))
    where = _where(path, raw, "topics")
    try:
        topics = re.compile(text)
    except re.error as e:
        raise TransformError(where, f"{what}: topics: not a regular expression ({e})", f"topics: {text}") from None
    name = str(raw.get("name", DEFAULT_NAME))
    try:
        fields = {field for _, field, _, _ in string.Formatter().parse(name) if field is not None}
    except ValueError as e:
        raise TransformError(_where(path, raw, "name"), f"{what}: name: {e}", f"name: {name}") from None
    allowed = set(NAME_PLACEHOLDERS) | set(topics.groupindex)
    if not fields or fields - allowed:
        raise TransformError(_where(path, raw, "name") if "name" in raw else where,
                             f"{what}: name: {name!r} must use placeholders from "
                             f"{', '.join('{' + p + '}' for p in sorted(allowed))} (each topic needs a name of its own)",
                             f"name: {name}")
    types = _types(path, raw, what) if "types" in raw else ()
    consistency, transactions = _consistency(path, raw, what)
    history, hard_deletes = _history(path, raw, what)
    return MirrorPattern(topics, name, _delete_mode(path, raw, what), _source_ts(path, raw, what), types,
                         _where(path, raw), _pool(path, raw, what), consistency, transactions, history, hard_deletes)


def _mirror(path: Path, raw: Any, index: int) -> Mirror | MirrorPattern:
    what = f"mirror {index}"
    if not isinstance(raw, dict):
        raise TransformError(Where(path, getattr(raw, "line", 1)), f"{what}: expected a mapping with model and topic")
    if "topics" in raw:
        return _pattern(path, raw, what)
    _check_keys(path, raw, MIRROR_KEYS, what)
    model = _identifier(path, raw, "model", what)
    topic = _topic(path, raw, "topic", what)
    table = _identifier(path, raw, "table", what) if "table" in raw else raw_table_name(topic)
    delete = _delete_mode(path, raw, what)
    primary_key = _named_expressions(path, raw, "primary-key", f"{what}: primary-key", "key") if "primary-key" in raw else None
    columns = _named_expressions(path, raw, "columns", f"{what}: columns", None) if "columns" in raw else None
    source_ts = _source_ts(path, raw, what)
    seen: set[str] = set()
    for name, text in (primary_key or ()) + (columns or ()):
        if name.lower() in seen:  # Spark resolves column names case-insensitively
            raise TransformError(text.where, f"{what}: column {name!r} is named twice (primary-key and columns share one namespace)")
        seen.add(name.lower())
    types = _types(path, raw, what) if "types" in raw else ()
    if types and columns is not None:
        raise TransformError(_where(path, raw, "types"), f"{what}: `types` applies to the default columns (every field "
                             "of value.after); with `columns`, write the type in the column's SQL, e.g. cast(... as string)")
    consistency, transactions = _consistency(path, raw, what)
    if consistency == "transaction":
        transactions = transactions or transaction_topic(connector_prefix(topic))
    history, hard_deletes = _history(path, raw, what)
    return Mirror(model, topic, table, delete, primary_key, columns, source_ts, _where(path, raw), types,
                  pool=_pool(path, raw, what), transactions=transactions, history=history, hard_deletes=hard_deletes)


def _history(path: Path, raw: dict, what: str) -> tuple[bool, str]:
    """`history:` (true or false) and `hard_deletes:` (HARD_DELETES, only beside `history: true`) of an entry."""
    history = raw.get("history", False)
    if not isinstance(history, bool):
        raise TransformError(_where(path, raw, "history"), f"{what}: history is true or false (whether the mirror "
                             "also keeps a history model, one row per version of each key)", f"history: {history!r}")
    if "hard_deletes" not in raw:
        return history, "invalidate"
    hard_deletes = raw["hard_deletes"]
    where = _where(path, raw, "hard_deletes")
    if not history:
        raise TransformError(where, f"{what}: hard_deletes says how the history model keeps deletes; "
                             "add `history: true`, or leave hard_deletes out", f"hard_deletes: {hard_deletes}")
    if hard_deletes not in HARD_DELETES:
        raise TransformError(where, f"{what}: hard_deletes is invalidate (a delete closes the key's last version) "
                             f"or new_record (a delete adds a version of its own), not {hard_deletes!r}",
                             f"hard_deletes: {hard_deletes}")
    return history, str(hard_deletes)


def _types(path: Path, raw: dict, what: str) -> tuple[tuple[str, str], ...]:
    """`types:` {field: Spark type}, each type checked by sqlglot's Spark dialect and rendered as Spark writes it."""
    value = raw["types"]
    if not isinstance(value, dict) or not value:
        raise TransformError(_where(path, raw, "types"), f"{what}: types: expected a mapping field: Spark type, "
                             "e.g. {discount: string}", f"types: {value!r}")
    pairs = []
    for name, type_text in value.items():
        where = _where(path, value, str(name))
        if not isinstance(name, str) or not IDENTIFIER_PATTERN.match(name):
            raise TransformError(where, f"{what}: types: {name!r} is not a plain field name")
        try:
            data_type = exp.DataType.build(str(type_text), dialect=sql.DIALECT)
        except Exception:  # noqa: BLE001 - sqlglot raises several kinds for a bad type
            data_type = None
        if data_type is None or data_type.this == exp.DataType.Type.USERDEFINED:
            raise TransformError(where, f"{what}: types.{name}: {type_text!r} is not a Spark SQL type "
                                 "(e.g. string, decimal(38, 10), bigint)", f"{name}: {type_text}")
        pairs.append((name, data_type.sql(dialect=sql.DIALECT).lower()))
    return tuple(pairs)


def load_mirrors(path: Path) -> MirrorFile:
    """Parse and check one mirror file; raise TransformError naming the line of the first problem."""
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise TransformError(Where(path, 1), "expected a mapping with a `mirrors:` list")
    if set(raw) - {"mirrors"}:
        _check_keys(path, raw, {"mirrors"}, "mirror file (mirrors go in a file of their own, without inputs/output/transforms)")
    entries = _require(path, raw, "mirrors", list, "mirror file")
    if not entries:
        raise TransformError(_where(path, raw, "mirrors"), "mirrors: at least one mirror is needed")
    parsed = [_mirror(path, entry, n) for n, entry in enumerate(entries, start=1)]
    mirrors = tuple(m for m in parsed if isinstance(m, Mirror))
    patterns = tuple(m for m in parsed if isinstance(m, MirrorPattern))
    seen: dict[str, Mirror] = {}
    for m in mirrors:
        for name in m.models:
            if name in seen:
                raise TransformError(m.where, f"model {name!r} (of mirror {m.model!r}) is also defined at line "
                                     f"{seen[name].where.line}")
            seen[name] = m
    # Everything renders now, so that a bad expression is reported at compile time.
    for m in mirrors:
        render_model(m, path)
        if m.history:
            render_history_model(m, path)
    for p in patterns:
        check = Mirror("pattern_check", "topic", "raw_topic", p.delete, None, None, p.source_ts, p.where, p.types,
                       history=p.history, hard_deletes=p.hard_deletes)
        render_model(check, path)
        if check.history:
            render_history_model(check, path)
    return MirrorFile(path, mirrors, patterns)


def _key_names(mirror: Mirror) -> list[str] | None:
    """The primary key's column names (None: the Kafka key's fields, found at run time); a new list each
    time, so the properties YAML repeats it rather than writing a YAML anchor."""
    return [name for name, _ in mirror.primary_key] if mirror.primary_key else None


def _expression(text: Text) -> exp.Expression:
    """One checked expression over the raw row's own columns (`kafka`, `key`, `value`)."""
    return sql.expression(text, (), unqualified_ok=True)


def _source(mirror: Mirror) -> str:
    return f"source({SOURCE_NAME!r}, {mirror.table!r})"


def rows_query(mirror: Mirror, history: bool = False) -> exp.Select:
    """The model's select: every raw change of the mirror's topic as the mirror's columns, one row per record.

    The machinery (macros/mirror/merge/zync_mirror_changes.sql) keeps those past the
    cursor, the last per key, and MERGEs them. A default the compiler cannot
    know (the Kafka key's fields, value.after's fields, the source time) is a
    macro that looks at the raw table at run time, so new fields flow in:
    value.after's fields arrive as one typed struct, AFTER_COLUMN, which the
    machinery spreads into columns (it leaves out the key's names).

    history: the history model's select (render_history_model): the same
    rows with each change's source position and transaction id besides, and,
    with `hard_deletes: new_record`, a delete's columns from value.before
    (the row as it was deleted) rather than from its empty value.after.
    """
    notes = f", notes={NOTES_VARIABLE}" if _shares_notes(mirror) else ""
    raw_columns = f", raw_columns={COLUMNS_VARIABLE}" if _shares_columns(mirror) else ""
    if mirror.primary_key is None:
        key: list[exp.Expression] = [jinja(f"zync_mirror_key_fields({_source(mirror)}{notes}{raw_columns})")]
    else:
        key = [exp.alias_(_expression(text), name) for name, text in mirror.primary_key]
    deleted_rows = history and mirror.hard_deletes == "new_record"
    if mirror.columns is None:
        types = f", types={dict(mirror.types)!r}" if mirror.types else ""
        image = "zync_history_typed_image" if deleted_rows else "zync_mirror_typed_after"
        columns: list[exp.Expression] = [
            exp.alias_(jinja(f"{image}({_source(mirror)}{types}{notes})"), AFTER_COLUMN)]
    else:
        columns = [exp.alias_(_deleted_image(_expression(text)) if deleted_rows else _expression(text), name)
                   for name, text in mirror.columns]
    source_ts = (_expression(mirror.source_ts) if mirror.source_ts is not None
                 else jinja(f"zync_mirror_source_ts({_source(mirror)}{raw_columns})"))
    kafka = sql.named_struct({f: path("kafka", f) for f in ("topic", "partition", "offset", "timestamp")})
    op = path("value", "op")
    position: list[exp.Expression] = [
        exp.alias_(jinja(f"zync_history_source_position({_source(mirror)}{raw_columns})"), "_zync_position"),
        exp.alias_(jinja(f"zync_history_transaction_id({_source(mirror)}{raw_columns})"), "_zync_transaction"),
    ] if history else []
    return (
        exp.select(
            *key, *columns,
            exp.alias_(op.copy(), "_zync_op"),
            exp.alias_(exp.cast(source_ts, "bigint"), "_zync_source_ts"),
            *position,
            exp.alias_(kafka, "_zync_kafka"),
        )
        .from_(jinja_table(_source(mirror)))
        .where(exp.and_(
            exp.EQ(this=path("kafka", "topic"), expression=exp.Literal.string(mirror.topic)),
            is_not_null(exp.column("value")),
            exp.In(this=op, expressions=[exp.Literal.string(o) for o in CHANGE_OPS]),
        ))
    )


def _deleted_image(tree: exp.Expression) -> exp.Expression:
    """An expression over value.after made to read value.before for a delete: each `value`.`after` in it
    becomes if(`value`.`op` = 'd', `value`.`before`, `value`.`after`) (the row as it was deleted)."""
    image = exp.If(this=exp.EQ(this=path("value", "op"), expression=exp.Literal.string("d")),
                   true=path("value", "before"), false=path("value", "after"))

    def swap(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Column):
            return node
        parts = [p.name for p in node.parts]
        if [p.lower() for p in parts[:2]] != ["value", "after"]:
            return node
        rest = parts[2:]
        return exp.Dot.build([exp.Paren(this=image.copy()), *map(exp.to_identifier, rest)]) if rest else image.copy()

    return tree.copy().transform(swap)


def _shares_notes(mirror: Mirror) -> bool:
    """Whether the model's key and value.after are both defaults, typed with the raw table's field notes."""
    return mirror.primary_key is None and mirror.columns is None


def _shares_columns(mirror: Mirror) -> bool:
    """Whether the model's key and source time are both defaults, read from the raw table's column types."""
    return mirror.primary_key is None and mirror.source_ts is None


def render_model(mirror: Mirror, source: Path) -> str:
    settings: dict[str, object] = {"topic": mirror.topic, "delete": mirror.delete, "primary_key": _key_names(mirror)}
    if mirror.columns is None:
        settings["columns"] = "after"  # the value columns are AFTER_COLUMN's fields (zync_mirror_settings)
    notes = (["{#- The raw table's field notes, read once for the key's and value.after's types. #}",
              f"{{%- set {NOTES_VARIABLE} = zync_field_notes({_source(mirror)}) %}}"]
             if _shares_notes(mirror) else [])
    columns = (["{#- The raw table's columns, described once for the key's names and the source time. #}",
                f"{{%- set {COLUMNS_VARIABLE} = zync_mirror_raw_columns({_source(mirror)}) %}}"]
               if _shares_columns(mirror) else [])
    return "\n".join([
        f"{{#- {GENERATED.format(source=source)} #}}",
        "{{ config(",
        "    materialized='zync_mirror',",
        "    file_format='delta',",
        "    tblproperties={'delta.enableDeletionVectors': 'true'},",
        f"    meta={{'zync_mirror': {_jinja_literal(settings)}}},",
        ") }}",
        *notes,
        *columns,
        "",
        f"-- every change of {mirror.topic} ({source.name}:{mirror.where.line}) as this mirror's columns, one row per",
        "-- raw record (tombstones and ops other than c, r, u, d left out); the zync_mirror materialization",
        "-- applies those past the mirror's cursor, the last per key, in one MERGE (macros/mirror/)",
        render(rows_query(mirror)),
        "",
    ])


def render_history_model(mirror: Mirror, source: Path) -> str:
    """The history model of a mirror with `history: true`: the mirror's rows with each change's source position
    and transaction id (rows_query(history=True)), which the zync_history materialization turns into versions."""
    settings: dict[str, object] = {"topic": mirror.topic, "mirror": mirror.model, "hard_deletes": mirror.hard_deletes,
                                   "primary_key": _key_names(mirror)}
    if mirror.columns is None:
        settings["columns"] = "after"
    notes = (["{#- The raw table's field notes, read once for the key's and the row's types. #}",
              f"{{%- set {NOTES_VARIABLE} = zync_field_notes({_source(mirror)}) %}}"]
             if _shares_notes(mirror) else [])
    columns = (["{#- The raw table's columns, described once for the key's names, the source time and position. #}",
                f"{{%- set {COLUMNS_VARIABLE} = zync_mirror_raw_columns({_source(mirror)}) %}}"]
               if _shares_columns(mirror) else [])
    return "\n".join([
        f"{{#- {GENERATED.format(source=source)} #}}",
        "{{ config(",
        "    materialized='zync_history',",
        "    file_format='delta',",
        "    tblproperties={'delta.enableDeletionVectors': 'true'},",
        f"    meta={{'zync_history': {_jinja_literal(settings)}}},",
        ") }}",
        *notes,
        *columns,
        "",
        f"-- every change of {mirror.topic} ({source.name}:{mirror.where.line}) as the history of mirror",
        f"-- {mirror.model}: its columns, source position and transaction, one row per raw record; the",
        "-- zync_history materialization adds those past its cursor as versions in one MERGE (macros/history/)",
        render(rows_query(mirror, history=True)),
        "",
    ])


def render_history_properties(mirror: Mirror, source: Path) -> str:
    key = ", ".join(n for n, _ in mirror.primary_key) if mirror.primary_key else "the Kafka key's fields"
    model = history_model_name(mirror.model)
    deletes = ("A delete closes its key's last version (hard_deletes: invalidate): its valid_to is the delete's "
               "time and no version of the key is current."
               if mirror.hard_deletes == "invalidate" else
               "A delete closes its key's last version and adds one of its own (hard_deletes: new_record): the "
               "row as deleted (value.before), _zync_op = 'd', never current.")
    source_arg = _source(mirror)
    columns: list[dict] = [
        {"name": "valid_from", "description": "When this version was made at the source (its change's source time)."},
        {"name": "valid_to", "description": "When the key's next change (an update or a delete) was made at the "
                                            "source; null while nothing followed."},
        {"name": "is_current", "description": "True on the version the source holds now (the mirror's row)."},
        {"name": "_zync_op", "description": "Debezium op of the change that made this version: c, u, r, or d "
                                            "(a deleted version, hard_deletes: new_record)."},
        {"name": "_zync_transaction", "description": "The source transaction's id (value.transaction.id), null "
                                                     "without Debezium's transaction metadata."},
        {"name": "_zync_source_ts", "description": "The change's source time in epoch milliseconds."},
        {"name": "_zync_position", "description": "The change's source position (value.source.lsn where the "
                                                  "connector gives it): versions are ordered by it, then by Kafka "
                                                  "partition and offset."},
        {"name": "_zync_kafka", "description": "Kafka topic, partition, offset and timestamp of the change; a "
                                               "record read again at the same position is one version."},
        {"name": "_zync_delete", "description": "The delete that closed this version (hard_deletes: invalidate), "
                                                "its position and time; null otherwise."},
    ]
    named = [{"name": n, "description": f"Primary key: `{t.sql}`."} for n, t in mirror.primary_key or ()]
    named += [{"name": n, "description": f"`{t.sql}`"} for n, t in mirror.columns or ()]
    doc = {
        "name": model,
        "description": (
            f"History (SCD type 2) of mirror {mirror.model}: one row per version of each primary key ({key}) of "
            f"Kafka topic {mirror.topic} (raw table {mirror.table}), defined in {source}"
            f"{f' by the entry for topics matching {mirror.pattern!r}' if mirror.pattern is not None else ''}. "
            "Versions of a key are ordered by source position (then Kafka partition and offset); each is valid "
            f"from its change's source time to the next change's. {deletes} A key created again gets a new "
            "version; a record read again changes nothing; a change arriving late repairs its neighbours' "
            f"valid_to. The macro zync_as_of reads the mirror as of a source time from it."
        ),
        "meta": {"zync_history_mirror": mirror.model, "zync_history_topic": mirror.topic,
                 "zync_history_hard_deletes": mirror.hard_deletes, "zync_transform_file": str(source),
                 **({PATTERN_META: mirror.pattern} if mirror.pattern is not None else {})},
        "data_tests": [
            {"zync_history_no_overlaps": {"arguments": {"source_relation": source_arg, "primary_key": _key_names(mirror)}}},
            {"zync_history_one_current": {"arguments": {"source_relation": source_arg, "primary_key": _key_names(mirror)}}},
            {"zync_history_current_is_mirror": {"arguments": {
                "source_relation": source_arg, "primary_key": _key_names(mirror), "mirror": f"ref({mirror.model!r})"}}},
        ],
        "columns": named + columns,
    }
    return _yaml({"version": 2, "models": [doc]}, GENERATED.format(source=source))


def _jinja_literal(value: object) -> str:
    """A setting as a Jinja literal (Python's repr, with None as Jinja's none)."""
    if value is None:
        return "none"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_jinja_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_jinja_literal(v) for v in value) + "]"
    return repr(value)


def _yaml(data: object, header: str) -> str:
    return f"# {header}\n" + yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)


def render_properties(mirror: Mirror, source: Path) -> str:
    deleted = (
        "A deleted key's row is removed (hard delete)."
        if mirror.delete == "hard"
        else "A deleted key's row stays, with _zync_deleted = true and the delete's time in _zync_deleted_at (soft delete)."
    )
    key = ", ".join(n for n, _ in mirror.primary_key) if mirror.primary_key else "the Kafka key's fields"
    columns: list[dict] = [
        {"name": "_zync_op", "description": "Debezium op of the change this row reflects: c, u, r (or d for a soft-deleted row)."},
        {"name": "_zync_source_ts", "description": f"Source time of that change ({mirror.source_ts.sql if mirror.source_ts else 'value.source.ts_ms, else value.ts_ms'}); an older snapshot read (r) never overwrites it."},
        {"name": "_zync_kafka", "description": "Kafka topic, partition, offset and timestamp of that change; the mirror's cursor is the largest offset per partition."},
    ]
    if mirror.delete == "soft":
        columns += [
            {"name": "_zync_deleted", "description": "True once the key was deleted at the source."},
            {"name": "_zync_deleted_at", "description": "When it was deleted (source time, else Kafka time)."},
        ]
    named = [{"name": n, "description": f"Primary key: `{t.sql}`."} for n, t in mirror.primary_key or ()]
    named += [{"name": n, "description": f"`{t.sql}`"} for n, t in mirror.columns or ()]
    source_arg = _source(mirror)
    model = {
        "name": mirror.model,
        "description": (
            f"Current-state mirror of Kafka topic {mirror.topic} (raw table {mirror.table}), one row per "
            f"primary key ({key}), defined in {source}"
            f"{f' by the entry for topics matching {mirror.pattern!r}' if mirror.pattern is not None else ''}: a view "
            f"of every ingested change, the Delta table {mirror.model}__base (folded up to a cursor by each "
            f"`dbt run`, one MERGE) with the raw changes past its cursor applied: c/r/u upsert, d deletes, the "
            f"last change per key wins, tombstones are ignored. {deleted} A snapshot read (r) older than a "
            f"change already seen for its key is ignored. Read an earlier state on the base: "
            f"`{mirror.model}__base VERSION AS OF n` or `TIMESTAMP AS OF 'ts'`."
        ),
        "meta": {"zync_mirror_topic": mirror.topic, "zync_mirror_delete": mirror.delete, "zync_transform_file": str(source),
                 **({PATTERN_META: mirror.pattern} if mirror.pattern is not None else {})},
        "data_tests": [
            {"zync_mirror_primary_key": {"arguments": {"source_relation": source_arg, "primary_key": _key_names(mirror)}}},
            {"zync_mirror_matches_raw": {"arguments": {
                "source_relation": source_arg, "delete": mirror.delete, "primary_key": _key_names(mirror)}}},
        ],
        "columns": named + columns,
    }
    if mirror.delete == "hard":
        model["data_tests"].insert(1, {"zync_mirror_no_deleted_keys": {"arguments": {
            "source_relation": source_arg, "primary_key": _key_names(mirror)}}})
    return _yaml({"version": 2, "models": [model]}, GENERATED.format(source=source))


def expand_project_patterns(files: list[MirrorFile], broker_topics: Iterable[str], project_root: Path) -> list[MirrorFile]:
    """expand_patterns over the broker's topics and the topics earlier compiles mirrored
    (previous_pattern_topics): what a compile, `zync run` and `zync etl status` all expand over."""
    return expand_patterns(files, set(broker_topics) | previous_pattern_topics(project_root))


def previous_pattern_topics(project_root: Path) -> set[str]:
    """The topics earlier compiles generated a pattern entry's mirror for (their properties' meta).

    They stay among the topics patterns expand over, so a topic gone from the
    broker (a table dropped from the connector) keeps its mirror and its raw
    table; deleting the generated files drops it.
    """
    found = set()
    for properties in sorted((project_root / MODELS_FOLDER).rglob("*.yml")):
        found |= _pattern_topics_of(properties)
    return found


# A properties file's pattern topics by (path, mtime, size): `zync run` asks every few seconds, and
# parsing a whole database's properties files each time took a tenth of its cycles' time.
_PATTERN_TOPICS_READ: dict[Path, tuple[tuple[int, int], frozenset[str]]] = {}


def _pattern_topics_of(properties: Path) -> frozenset[str]:
    try:
        stat = properties.stat()
    except OSError:
        return frozenset()
    stamp = (stat.st_mtime_ns, stat.st_size)
    known = _PATTERN_TOPICS_READ.get(properties)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        doc = yaml.load(properties.read_text(), Loader=SafeLoader) or {}  # noqa: S506 - a safe loader
    except (OSError, yaml.YAMLError):
        return frozenset()
    topics = set()
    for model in doc.get("models") or [] if isinstance(doc, dict) else []:
        meta = model.get("meta") or {} if isinstance(model, dict) else {}
        if meta.get(PATTERN_META) and meta.get("zync_mirror_topic"):
            topics.add(str(meta["zync_mirror_topic"]))
    _PATTERN_TOPICS_READ[properties] = (stamp, frozenset(topics))
    return frozenset(topics)


def compile_mirrors(files: list[MirrorFile], relative: Any, subfolder: Any = lambda source: Path()) -> list[tuple[Path, str]]:
    """(path relative to the project root, text) of every mirror model and its properties.

    subfolder(source file, relative) -> the folder below models/mirrors its models go to.
    """
    out: list[tuple[Path, str]] = []
    seen: dict[str, Mirror] = {}
    for f in files:
        for m in f.mirrors:
            for name in m.models:
                if name in seen:
                    raise TransformError(m.where, f"model {name!r} (of mirror {m.model!r}) is also defined at "
                                         f"{seen[name].where}")
                seen[name] = m
    for f in files:
        source = relative(f.path)
        folder = MODELS_FOLDER / subfolder(source)
        for m in f.mirrors:
            out.append((folder / f"{m.model}.sql", render_model(m, source)))
            out.append((folder / f"{m.model}.yml", render_properties(m, source)))
            if m.history:
                history = history_model_name(m.model)
                out.append((folder / f"{history}.sql", render_history_model(m, source)))
                out.append((folder / f"{history}.yml", render_history_properties(m, source)))
    return out
