"""Read a generated output model as SQL: its CTEs as sqlglot trees, and the machinery's arguments as data.

The model is a dbt file: its Jinja parts (config, import CTEs, macro calls)
are replaced by stand-ins sqlglot can parse, so tests assert on the SQL's
structure rather than on its text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp


@dataclass(frozen=True)
class Model:
    ctes: dict[str, exp.Query]
    final: exp.Select  # the model's last select
    output_rows: dict  # the arguments of the zync_output_rows call, as Python data
    jinja_statements: list[str]  # {% ... %} statements, e.g. the struct guards


def parse_model(text: str) -> Model:
    statements = re.findall(r"\{%-?\s*(.*?)\s*-?%\}", text, flags=re.S)
    call = re.search(r"\{\{ zync_output_rows\((.*?)\) \}\}", text, flags=re.S)
    assert call, "the model does not end with the zync_output_rows machinery"
    jinja_literals = re.sub(r"\btrue\b", "True", call.group(1).replace("none", "None"))
    arguments = ast.parse(f"f({jinja_literals})", mode="eval").body
    output_rows = {k.arg: (ast.literal_eval(k.value) if k.arg != "state" else None) for k in arguments.keywords}
    sql = re.sub(r"\{#.*?#\}|\{%.*?%\}", "", text, flags=re.S)
    sql = re.sub(r"\{\{ config\(.*?\) \}\}", "", sql, flags=re.S)
    sql = sql.replace(call.group(0), "zync_output_rows AS (SELECT 1)")
    sql = re.sub(r"\{\{ zync_pending\(.*?\) \}\}", "SELECT * FROM zync_pending", sql, flags=re.S)
    sql = re.sub(r"\{\{ (zync_\w+\(.*?\)) \}\}", r"\1", sql)  # a macro call in a rule: a function call
    sql = re.sub(r"\{\{ ref\('(\w+)'\) \}\}", r"ref__\1", sql)
    assert "{{" not in sql, sql
    tree = sqlglot.parse_one(sql, read="spark")
    ctes = {cte.alias: cte.this for cte in tree.args["with_"].expressions} if "with_" in tree.args else {
        cte.alias: cte.this for cte in tree.args["with"].expressions}
    final = tree.copy()
    final.set("with_" if "with_" in tree.args else "with", None)
    return Model(ctes, final, output_rows, statements)


def same(tree: exp.Expression | str) -> str:
    """A tree (or SQL text) in one normal form, for comparing SQL regardless of layout and quoting."""
    if isinstance(tree, str):
        tree = sqlglot.parse_one(tree, read="spark")
    tree = tree.copy()
    for paren in list(tree.find_all(exp.Paren)):  # grouping as written is not the point
        paren.replace(paren.this)
    return tree.sql(dialect="spark", identify=True, comments=False)


def projection(query: exp.Select) -> dict[str, str]:
    """alias -> the normal form of its expression."""
    return {e.alias_or_name: same(e.this if isinstance(e, exp.Alias) else e) for e in query.expressions}
