"""Every use of a private PySpark (or py4j) attribute is in zync/spark_internals.py.

They may change in any PySpark release; with one home, such a change is one module's to
follow, each use behind a function that says why it is needed.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "zync" / "spark_internals.py"
FOLDERS = ("bench", "cli", "compiler", "dbt_zync", "egress", "ingest", "service", "stack", "testkit", "tests", "zync")
# PySpark's and py4j's private handles on the JVM and on its own state.
PRIVATE = {"_jvm", "_jsc", "_sc", "_jdf", "_jc", "_jsparkSession", "_jconf", "_instantiatedSession",
           "_active_spark_context", "_gateway", "_gateway_client", "_jseq", "_jmap", "_to_java_column"}


def _uses(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and node.attr in PRIVATE
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


def test_private_pyspark_attributes_only_in_spark_internals():
    assert _uses(HOME), "the home itself should hold the uses this test looks for"
    elsewhere = [use for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))
                 if path not in (HOME, Path(__file__).resolve()) for use in _uses(path)]
    assert not elsewhere, "private PySpark attributes outside zync/spark_internals.py:\n" + "\n".join(elsewhere)
