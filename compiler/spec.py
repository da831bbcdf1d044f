"""Read and check transform YAML into plain dataclasses, remembering where each value came from."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from zync import durations
from zync.errors import ZyncError
from zync.ingest_options import TOLERANCES
from zync.transactions import connector_prefix, transaction_topic

# Kafka's own rule for topic names; it also makes them safe as SQL string literals.
TOPIC_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
IDENTIFIER_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TransformError(ZyncError):
    """A problem in a transform file, located by file and line."""

    def __init__(self, where: Where, message: str, text: str | None = None):
        detail = f"\n    {text}" if text else ""
        super().__init__(f"{where}: {message}{detail}")
        self.where = where


@dataclass(frozen=True)
class Where:
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class _Located(dict):
    """A YAML mapping that knows the line of each of its keys and of itself."""

    lines: dict[str, int]
    line: int


class _LineLoader(yaml.SafeLoader):
    pass


_BOOL_TAG = "tag:yaml.org,2002:bool"


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Located:
    # YAML 1.1 reads a bare `on:` (or yes/no/off) key as a boolean; a join's `on:` must stay a name.
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _BOOL_TAG and key_node.value.lower() not in ("true", "false"):
            key_node.tag = "tag:yaml.org,2002:str"
    mapping = _Located(loader.construct_mapping(node, deep=True))
    mapping.lines = {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
    mapping.line = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@dataclass(frozen=True)
class Text:
    """A user-written SQL expression and where it was written."""

    sql: str
    where: Where


# A key or value: an expression, a mapping of field -> Text / nested mapping, or None (tombstone).
Shape = Text | dict[str, "Shape"] | None


@dataclass(frozen=True)
class ExpireAfter:
    """How long a record may stay pending: `offsets` newer records, or `seconds` of Kafka time."""

    offsets: int | None = None
    seconds: float | None = None

    def as_macro_arg(self) -> dict[str, float | int]:
        return {"offsets": self.offsets} if self.offsets is not None else {"seconds": self.seconds}


@dataclass(frozen=True)
class Input:
    topic: str
    table: str
    where: Where
    expire_after: ExpireAfter | None = None
    errors_tolerance: str | None = None  # ingest's, for the topic (Kafka Connect's errors.tolerance); None: unsaid
    pool: str | None = None  # the raw pool holding the topic's records (`table` is then a view over it), if any
    # Its connector's transaction topic, when its raw view stops at the connector's cut (`consistency: transaction`).
    transactions: str | None = None


@dataclass(frozen=True)
class Lookup:
    """A lookup table a rule may join: a dbt seed or model, read through ref()."""

    name: str  # how expressions call its rows, e.g. customers.id
    ref: str  # the seed or model
    where: Where


@dataclass(frozen=True)
class LookupJoin:
    """A rule's left join with a lookup, on equalities between lookup columns and the rule's records."""

    lookup: str
    on: Text


@dataclass(frozen=True)
class Rule:
    kind: str  # "denorm" or "stateless"
    index: int
    where: Where
    condition: Text | None
    out: str
    key: Shape
    value: Shape
    inputs: tuple[str, ...]  # (left, right) for denorm, (in,) for stateless
    join_on: Text | None = None
    joins: tuple[LookupJoin, ...] = ()


class ReadsRawTables(Protocol):
    """A compiled file whose models read raw tables (a transform file or a mirror file)."""

    @property
    def reads(self) -> tuple[tuple[str, Input], ...]: ...


@dataclass(frozen=True)
class Transform:
    path: Path
    inputs: tuple[Input, ...]
    output_topic: str
    model: str
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    lookups: tuple[Lookup, ...] = ()

    @property
    def reads(self) -> tuple[tuple[str, Input], ...]:
        """(model, input) for every raw table this file's models read: what the sources YAML lists."""
        return tuple((self.model, i) for i in self.inputs)

    @property
    def whole_transactions(self) -> bool:
        """Every input reads at its connector's cut (`consistency: transaction`): the output takes and publishes
        source transactions whole, each out row carrying its source transaction."""
        return bool(self.inputs) and all(i.transactions is not None for i in self.inputs)

    @property
    def transaction_topic(self) -> str | None:
        """The transaction topic of the connector whose source transactions the output takes whole, if it does."""
        return self.inputs[0].transactions if self.whole_transactions else None


def _where(path: Path, mapping: Any, key: str | None = None) -> Where:
    if isinstance(mapping, _Located):
        return Where(path, mapping.lines.get(key, mapping.line) if key else mapping.line)
    return Where(path, 1)


def _require(path: Path, mapping: Any, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise TransformError(_where(path, mapping), f"{what}: `{key}` is missing")
    value = mapping[key]
    if not isinstance(value, kind):
        raise TransformError(_where(path, mapping, key), f"{what}: `{key}` has the wrong form", f"{key}: {value!r}")
    return value


def _check_keys(path: Path, mapping: dict, allowed: set[str], what: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise TransformError(
                _where(path, mapping, key),
                f"{what}: unknown setting `{key}` (allowed: {', '.join(sorted(allowed))})",
            )


def _topic(path: Path, mapping: dict, key: str, what: str) -> str:
    topic = str(_require(path, mapping, key, str, what))
    if not TOPIC_PATTERN.match(topic):
        raise TransformError(_where(path, mapping, key), f"{what}: {topic!r} is not a legal Kafka topic name")
    return topic


def _identifier(path: Path, mapping: dict, key: str, what: str) -> str:
    name = str(_require(path, mapping, key, str, what))
    if not IDENTIFIER_PATTERN.match(name):
        raise TransformError(
            _where(path, mapping, key), f"{what}: {name!r} must be a plain SQL name (letters, digits, _)"
        )
    return name


def _shape(path: Path, mapping: dict, key: str, what: str) -> Shape:
    if key not in mapping:
        raise TransformError(_where(path, mapping), f"{what}: `{key}` is missing")
    value = mapping[key]
    where = _where(path, mapping, key)
    if value is None:
        return None
    if isinstance(value, dict):
        shaped: dict[str, Shape] = {}
        for field_name in value:
            if not isinstance(field_name, str) or not IDENTIFIER_PATTERN.match(field_name):
                raise TransformError(_where(path, value, str(field_name)), f"{what}: field name {field_name!r} is not a plain name")
            shaped[field_name] = _shape(path, value, field_name, f"{what}.{field_name}")
        if not shaped:
            raise TransformError(where, f"{what}: an empty mapping; use null for a tombstone")
        return shaped
    if isinstance(value, (str, int, float, bool)):
        return Text(str(value).lower() if isinstance(value, bool) else str(value), where)
    raise TransformError(where, f"{what}: expected a SQL expression, a mapping or null", repr(value))


TOLERANCE_KEY = "errors.tolerance"
# The settings each kind of mapping takes (docs/reference/transform-yaml.md has a table of each).
FILE_KEYS = frozenset({"inputs", "output", "transforms", "lookups"})
INPUT_KEYS = frozenset({"topic", "table", "expire-after", TOLERANCE_KEY, "pool", "consistency", "transactions"})
OUTPUT_KEYS = frozenset({"topic", "model"})
RULE_KEYS = frozenset({"type", "where", "out", "key", "value", "join"})
DENORM_KEYS = RULE_KEYS | {"left", "right", "join-on"}
STATELESS_KEYS = RULE_KEYS | {"in"}
LOOKUP_KEYS = frozenset({"name", "ref"})
JOIN_KEYS = frozenset({"lookup", "on"})


def _errors_tolerance(path: Path, item: dict) -> str | None:
    """`errors.tolerance: none | all`: what ingest does with a message of this topic it cannot take."""
    if item.get(TOLERANCE_KEY) is None:
        return None
    value = item[TOLERANCE_KEY]
    if value not in TOLERANCES:
        raise TransformError(_where(path, item, TOLERANCE_KEY),
                             "errors.tolerance is none (stop at a bad message) or all (dead-letter it)",
                             f"errors.tolerance: {value!r}")
    return value


def _expire_after(path: Path, item: dict) -> ExpireAfter | None:
    """`expire-after: 1000` (offsets) or `expire-after: 30m` (Kafka time, zync.durations)."""
    if item.get("expire-after") is None:
        return None
    value = item["expire-after"]
    where = _where(path, item, "expire-after")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return ExpireAfter(offsets=value)
    duration = durations.seconds(value, unit_required=True) if isinstance(value, str) else None
    if duration:
        return ExpireAfter(seconds=duration)
    raise TransformError(
        where, f"expire-after must be a positive number of offsets (e.g. 1000) or a duration (e.g. {durations.EXAMPLES})",
        f"expire-after: {value!r}",
    )


CONSISTENCIES = ("topic", "transaction")  # `consistency:` each topic on its own (the default), or whole transactions


def consistency_of(path: Path, raw: dict, what: str) -> tuple[str, str | None]:
    """`consistency:` and `transactions:` (the transaction topic, if named) of an entry (a mirror entry or a transform's input)."""
    consistency = str(raw.get("consistency", "topic"))
    if consistency not in CONSISTENCIES:
        raise TransformError(_where(path, raw, "consistency"), f"{what}: consistency is one of "
                             f"{', '.join(CONSISTENCIES)}, not {consistency!r}", f"consistency: {consistency}")
    transactions = _topic(path, raw, "transactions", what) if "transactions" in raw else None
    if transactions is not None and consistency != "transaction":
        raise TransformError(_where(path, raw, "transactions"), f"{what}: `transactions` names the transaction topic "
                             "of `consistency: transaction`; add that, or leave `transactions` out")
    if consistency == "transaction" and "pool" not in raw:
        raise TransformError(_where(path, raw, "consistency"), f"{what}: `consistency: transaction` needs `pool:`: "
                             "the cut is kept by the raw pool that takes the connector's topics and its transaction "
                             "topic (docs: Source transactions)", "consistency: transaction")
    return consistency, transactions


def pool_of(path: Path, raw: dict, what: str) -> str | None:
    """`pool:` the raw pool's table name, if the entry (or input) has one."""
    return _identifier(path, raw, "pool", what) if "pool" in raw else None


# Names an expression already gives a meaning to: the records and the raw columns.
RESERVED_NAMES = {"left", "right", "in", "kafka", "key", "value"}


def _lookups(path: Path, raw: dict) -> tuple[Lookup, ...]:
    """The top-level `lookups:` list: [{name: customers, ref: customer_ids}, ...]."""
    if raw.get("lookups") is None:
        return ()
    items = _require(path, raw, "lookups", list, "transform file")
    lookups: dict[str, Lookup] = {}
    for item in items:
        if not isinstance(item, dict):
            raise TransformError(_where(path, raw, "lookups"), "lookups: each lookup is {name: ..., ref: <seed or model>}")
        _check_keys(path, item, LOOKUP_KEYS, "lookup")
        name = _identifier(path, item, "name", "lookup")
        if name.lower() in RESERVED_NAMES:
            raise TransformError(_where(path, item, "name"), f"lookup: {name!r} already names a record or raw column "
                                 f"({', '.join(sorted(RESERVED_NAMES))}); choose another name")
        if name in lookups:
            raise TransformError(_where(path, item, "name"), f"lookup: {name!r} is listed twice")
        lookups[name] = Lookup(name, _identifier(path, item, "ref", f"lookup {name}"), _where(path, item))
    return tuple(lookups.values())


def _joins(path: Path, raw: dict, what: str, lookups: dict[str, Lookup]) -> tuple[LookupJoin, ...]:
    """A rule's `join:` list: [{lookup: customers, on: customers.name = in.value.after.customer}, ...]."""
    if raw.get("join") is None:
        return ()
    items = _require(path, raw, "join", list, what)
    joins: list[LookupJoin] = []
    for item in items:
        if not isinstance(item, dict):
            raise TransformError(_where(path, raw, "join"), f"{what}: each join is {{lookup: <name>, on: <equalities>}}")
        _check_keys(path, item, JOIN_KEYS, f"{what}: join")
        name = str(_require(path, item, "lookup", str, f"{what}: join"))
        if name not in lookups:
            known = ", ".join(sorted(lookups)) or "none: add a top-level `lookups:` list"
            raise TransformError(_where(path, item, "lookup"), f"{what}: unknown lookup {name!r} (lookups: {known})",
                                 f"lookup: {name}")
        if any(j.lookup == name for j in joins):
            raise TransformError(_where(path, item, "lookup"), f"{what}: lookup {name!r} is joined twice; "
                                 "list it again under another name in `lookups:` to join it twice")
        on = _require(path, item, "on", str, f"{what}: join")
        joins.append(LookupJoin(name, Text(on, _where(path, item, "on"))))
    return tuple(joins)


def _rule(path: Path, index: int, raw: Any, topics: set[str], output_topic: str,
          lookups: dict[str, Lookup] | None = None) -> Rule:
    what = f"transform {index}"
    if not isinstance(raw, dict):
        raise TransformError(Where(path, getattr(raw, "line", 1)), f"{what}: expected a mapping")
    kind = _require(path, raw, "type", str, what)
    if kind == "denorm":
        _check_keys(path, raw, DENORM_KEYS, what)
        sides = (_topic(path, raw, "left", what), _topic(path, raw, "right", what))
        join_on = Text(str(_require(path, raw, "join-on", str, what)), _where(path, raw, "join-on"))
    elif kind == "stateless":
        _check_keys(path, raw, STATELESS_KEYS, what)
        sides, join_on = (_topic(path, raw, "in", what),), None
    else:
        raise TransformError(_where(path, raw, "type"), f"{what}: type must be denorm or stateless", f"type: {kind}")
    for side, topic in zip(("left", "right") if kind == "denorm" else ("in",), sides):
        if topic not in topics:
            raise TransformError(
                _where(path, raw, side), f"{what}: {side} topic {topic!r} is not among the inputs ({', '.join(sorted(topics))})"
            )
    out = _topic(path, raw, "out", what)
    if out != output_topic:
        raise TransformError(_where(path, raw, "out"), f"{what}: out {out!r} is not the output topic {output_topic!r}")
    condition = None
    if raw.get("where") is not None:
        condition = Text(str(raw["where"]), _where(path, raw, "where"))
    return Rule(
        kind=kind, index=index, where=_where(path, raw), condition=condition, out=out,
        key=_shape(path, raw, "key", f"{what}: key"), value=_shape(path, raw, "value", f"{what}: value"),
        inputs=sides, join_on=join_on, joins=_joins(path, raw, what, lookups or {}),
    )


def read_yaml(path: Path) -> Any:
    """A transform or mirror file's YAML, each mapping and list knowing its line; a file that is not
    YAML (or not UTF-8 text) raises TransformError at the line of the problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        line = path.read_bytes()[:e.start].count(b"\n") + 1
        raise TransformError(Where(path, line), f"not UTF-8 text (byte {e.object[e.start]:#04x}); save the file as UTF-8") from None
    except OSError as e:
        raise ZyncError(f"{path}: cannot read it: {e.strerror}") from None
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else 1
        raise TransformError(Where(path, line), f"not valid YAML: {e.problem}") from None
    except yaml.reader.ReaderError as e:  # a character YAML does not allow: no mark, a position
        line = text[:e.position].count("\n") + 1
        raise TransformError(Where(path, line), f"not valid YAML: character {e.character!r} is not allowed ({e.reason})") from None
    except yaml.YAMLError as e:
        raise TransformError(Where(path, 1), f"not valid YAML: {e}") from None


def _input(path: Path, item: dict) -> Input:
    """An item of `inputs:`: a raw table of its own, or (`pool:`) a pooled topic's raw view, at its connector's cut
    with `consistency: transaction`."""
    topic = _topic(path, item, "topic", "input")
    consistency, transactions = consistency_of(path, item, f"input {topic}")
    pool = pool_of(path, item, f"input {topic}")
    if pool is not None and item.get(TOLERANCE_KEY) is not None:
        raise TransformError(_where(path, item, TOLERANCE_KEY), f"input {topic}: a raw pool's topics stop at a bad "
                             "message (no dead letters): leave errors.tolerance out of a pooled input")
    if consistency == "transaction":
        transactions = transactions or transaction_topic(connector_prefix(topic))
    return Input(topic, _identifier(path, item, "table", "input"), _where(path, item), _expire_after(path, item),
                 _errors_tolerance(path, item), pool=pool, transactions=transactions)


def _whole_transactions_or_none(path: Path, inputs: list[Input]) -> None:
    """An output keeps source transactions whole only if every input reads at its connector's cut: an input read
    as it comes would pair a transaction's record with records of transactions not whole yet."""
    at_cut = [i for i in inputs if i.transactions is not None]
    if at_cut and len(at_cut) != len(inputs):
        other = next(i for i in inputs if i.transactions is None)
        raise TransformError(other.where, f"input {other.topic}: input {at_cut[0].topic} has `consistency: "
                             "transaction`, so the output takes whole source transactions, and every input must "
                             "then read at its connector's cut: give this input `pool:` and `consistency: "
                             "transaction` too (or take `consistency: transaction` off the others)")
    other = next((i for i in at_cut if i.transactions != at_cut[0].transactions), None)
    if other is not None:
        raise TransformError(other.where, f"input {other.topic}: it reads at the cut of {other.transactions}, input "
                             f"{at_cut[0].topic} at the cut of {at_cut[0].transactions}: an output takes the whole "
                             "source transactions of one connector, in its commit order (its transaction topic's "
                             "order), and two connectors' orders do not compare. Read one connector's topics here, "
                             "or take `consistency: transaction` off the inputs")


def load_transform(path: Path) -> Transform:
    """Parse one transform file; raise TransformError naming the line of the first problem."""
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise TransformError(Where(path, 1), "expected a mapping with inputs, output and transforms")
    _check_keys(path, raw, FILE_KEYS, "transform file")
    inputs_raw = _require(path, raw, "inputs", list, "transform file")
    inputs = []
    for item in inputs_raw:
        if not isinstance(item, dict):
            raise TransformError(_where(path, raw, "inputs"), "inputs: each input is {topic: ..., table: ...}")
        _check_keys(path, item, INPUT_KEYS, "input")
        inputs.append(_input(path, item))
    _whole_transactions_or_none(path, inputs)
    topics = [i.topic for i in inputs]
    if len(set(topics)) != len(topics):
        raise TransformError(_where(path, raw, "inputs"), "inputs: a topic is listed twice")
    output = _require(path, raw, "output", dict, "transform file")
    _check_keys(path, output, OUTPUT_KEYS, "output")
    output_topic = _topic(path, output, "topic", "output")
    model = _identifier(path, output, "model", "output")
    if output_topic in topics:
        raise TransformError(_where(path, output, "topic"), f"output: topic {output_topic!r} is also an input; a transform cannot feed itself")
    rules_raw = _require(path, raw, "transforms", list, "transform file")
    if not rules_raw:
        raise TransformError(_where(path, raw, "transforms"), "transforms: at least one transform is needed")
    lookups = _lookups(path, raw)
    by_name = {lookup.name: lookup for lookup in lookups}
    rules = tuple(_rule(path, n, r, set(topics), output_topic, by_name) for n, r in enumerate(rules_raw, start=1))
    return Transform(path=path, inputs=tuple(inputs), output_topic=output_topic, model=model, rules=rules,
                     lookups=lookups)
