"""No module of the product imports itself back through others (type-checking imports included).

A circle makes the import order matter and hides which module a contract belongs to; each
contract gets a home that both sides import instead.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cli", "compiler", "dbt_zync", "egress", "ingest", "service", "stack", "zync")


def _imports() -> dict[str, set[str]]:
    """Each product module -> the product modules it names in an import, anywhere in its text."""
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).glob("*.py"):
            module = f"{package}.{path.stem}"
            named: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module in PACKAGES:
                    named |= {f"{node.module}.{alias.name}" for alias in node.names}  # from ingest import data_file
                elif isinstance(node, ast.ImportFrom) and node.module:
                    named.add(node.module)
                elif isinstance(node, ast.Import):
                    named |= {alias.name for alias in node.names}
            graph[module] = {n for n in named if n.split(".")[0] in PACKAGES and n != module}
    return graph


def _circle(graph: dict[str, set[str]], start: str) -> list[str] | None:
    paths, seen = [[start]], set()
    while paths:
        path = paths.pop()
        for nxt in sorted(graph.get(path[-1], ())):
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                paths.append(path + [nxt])
    return None


def test_no_module_imports_itself_back():
    graph = _imports()
    assert "ingest.table" in graph and "ingest.data_file" in graph["ingest.table"]
    circles = [" -> ".join(c) for m in sorted(graph) if (c := _circle(graph, m))]
    assert not circles, "import circles:\n" + "\n".join(circles)
