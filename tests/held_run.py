"""Two `dbt run`s of one model in the worst order: one holds between reading and writing while another commits.

dbt renders a model (its SQL reads the cursors) before it runs the model's
pre-hooks and its materialization (which writes). A scratch project given
`add_hold_hook` holds a model's run in that pre-hook, with var `hold_until`
{<model>: {sql: <a count query>, at_least: N}}, until the count reaches N:
until another run, in another process, has committed. The other run is a `dbt`
process of its own (`other_dbt_run`): two dbt invocations in one process
share one adapter, and the first to end closes the other's connections.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from zync.spark_internals import jvm_of

ROOT = Path(__file__).resolve().parents[1]

HELD_PREFIX = "zync.test.held."
HOLD_MACRO = """\
{% macro hold_until() -%}
  {%- set hold = var('hold_until', {}).get(this.identifier) -%}
  {%- set waiting = {'on': execute and hold is not none} -%}
  {%- if waiting.on -%}
    {#- Its render (and so its reads) is done: said where another thread can see it, the JVM's system properties. -#}
    {%- do run_query("select reflect('java.lang.System', 'setProperty', 'HELD_PREFIX" ~ this.identifier ~ "', 'true')") -%}
  {%- endif -%}
  {%- for attempt in range(150) if waiting.on -%}
    {%- if run_query(hold.sql).rows[0][0] >= hold.at_least -%}
      {%- do waiting.update({'on': false}) -%}
    {%- else -%}
      {%- do run_query("select reflect('java.lang.Thread', 'sleep', cast(2000 as bigint))") -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro %}
""".replace("HELD_PREFIX", HELD_PREFIX)


def held_property(model: str) -> str:
    """The JVM system property a held run of `model` sets once it holds (HOLD_MACRO)."""
    return HELD_PREFIX + model


def add_hold_hook(project: Path) -> None:
    """Give every model of the scratch project at `project` the holding pre-hook."""
    (project / "test_macros").mkdir(exist_ok=True)
    (project / "test_macros" / "hold_until.sql").write_text(HOLD_MACRO)
    config = yaml.safe_load((project / "dbt_project.yml").read_text())
    config["macro-paths"].append("test_macros")
    config["models"]["zync"]["+pre-hook"] = "{{ hold_until() }}"
    (project / "dbt_project.yml").write_text(yaml.safe_dump(config))


class HeldRun:
    """`invoke("run", ...)` (an in-process dbt run of `holds`' models, one thread each) in a thread of
    its own, each model held until its {model: (count query, at_least)} is reached."""

    def __init__(self, invoke, holds: dict[str, tuple[str, int]]):
        self.results: list = []
        self.models = list(holds)
        hold = {model: {"sql": sql, "at_least": at_least} for model, (sql, at_least) in holds.items()}
        args = ["run", "--select", *holds, "--threads", str(len(holds)),
                "--vars", yaml.safe_dump({"hold_until": hold}, default_flow_style=True)]
        self.thread = threading.Thread(target=lambda: self.results.append(invoke(*args, expect_success=False)))
        self.thread.start()

    def wait_until_held(self, spark, timeout: float = 120) -> None:
        """Wait until every held model has rendered (read) and holds, its run still going."""
        jvm = jvm_of(spark)
        self.wait_until(lambda: all(jvm.System.getProperty(held_property(m)) for m in self.models),
                        "its hold", timeout)
        for model in self.models:
            jvm.System.clearProperty(held_property(model))

    def wait_until(self, condition, what: str, timeout: float = 120) -> None:
        """Wait for condition() while the run is still held (it must not have ended)."""
        deadline = time.monotonic() + timeout
        while not condition() and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert self.thread.is_alive() and condition(), f"the held run never reached {what}: {self.results}"

    def messages(self, timeout: float = 300) -> dict[str, str]:
        """{model: its error} of the held run once it ended ("" for a model that succeeded)."""
        self.thread.join(timeout=timeout)
        assert not self.thread.is_alive(), "the held run did not end"
        result = self.results[0]
        assert result.exception is None, result.exception
        return {r.node.name: "" if r.status == "success" else str(r.message) for r in result.results}


def other_dbt_run(project: Path, *models: str) -> None:
    """`dbt run --select models` in a process of its own (the shared catalog's other user); it must succeed."""
    other = subprocess.run(
        [str(Path(sys.executable).parent / "dbt"), "run", "--select", *models,
         "--project-dir", str(project), "--profiles-dir", str(ROOT / "profiles")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert other.returncode == 0, other.stdout[-3000:]
