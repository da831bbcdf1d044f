"""The README's daily-workflow YAML, copied into transforms/ of a clone, compiles beside the demo's own.

`zync etl compile` reads the demos' transform files with the user's, so an example that reused the
demo's output topic or model names would fail the first compile a new user runs.
"""
import re
from pathlib import Path

from compiler.build import compile_transforms, transform_files

ROOT = Path(__file__).resolve().parents[2]


def _readme_files() -> dict[str, str]:
    """Each ```yaml block of the README that starts with `# transforms/<file>`: file name -> text."""
    blocks = re.findall(r"```yaml\n# transforms/(\S+)\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return dict(blocks)


def test_the_readmes_examples_compile_beside_the_demos(tmp_path):
    files = _readme_files()
    assert {"invoices.yml", "mirrors.yml"} <= set(files)
    (tmp_path / "transforms").mkdir()
    for demo_file in (ROOT / "demo").glob("*/transforms/*.yml"):
        copy = tmp_path / demo_file.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(demo_file.read_text())
    for name, text in files.items():
        (tmp_path / "transforms" / name).write_text(text)
    # A broker with one table of a Debezium connector: the pattern entry's mirror is compiled too.
    generated = compile_transforms(transform_files(tmp_path), tmp_path, topics=lambda: {"pg.public.orders"})
    paths = {str(g.path) for g in generated}
    assert {"models/outputs/invoices_with_status.sql", "models/mirrors/invoices_current.sql",
            "models/mirrors/pg_orders.sql", "models/outputs/demo/new_invoices.sql"} <= paths, sorted(paths)
