"""`zync run` when its Spark engine dies: it ends at once with a clear error.

The driver JVM (the `java` child of the `zync run` process) is killed with
kill -9 at a seeded random moment of the run's first cycle, while it takes
a batch (the first cycle: a second would double this test's time on a
loaded machine; bench/chaos.py kills warm runs): the run must exit 1
naming the dead engine within seconds (not retry failing stages forever, not
hang), and what it published is a prefix of the stream. (That a restart then
drains exactly is what bench/chaos.py's spark-failure trials check; a second
cold JVM here would double this test's minute.)
"""

from __future__ import annotations

import os
import random
import subprocess
import time

from testkit.harness import RunProcess, engine_pid, wait_until
from testkit.invoices import invoices_project

SEED = int(os.environ.get("ZYNC_RUN_KILL_SEED", "14"))
EXIT_S = 60.0  # a failing stage's own timeout may run before the run sees the dead JVM


def test_a_dead_spark_engine_ends_zync_run_with_a_clear_error(target, tmp_path):
    project = invoices_project(tmp_path, "Engine")
    log = tmp_path / "zync-run.log"
    run = RunProcess(project, log)
    try:
        project.produce_batch(target, 1)
        # The engine is up and the models are chosen: the first cycle starts.
        wait_until(lambda: "models: " in log.read_text(), "the run's first cycle", run)
        time.sleep(random.Random(SEED).uniform(0.0, 6.0))
        jvm = engine_pid(run.process.pid)
        assert jvm is not None, "zync run has no java child"
        subprocess.run(["kill", "-9", str(jvm)], check=True)
        try:
            code = run.process.wait(EXIT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"zync run still running {EXIT_S:.0f}s after its JVM died:\n"
                                 + log.read_text()[-3000:]) from None
        text = log.read_text()
        assert code == 1, text[-3000:]
        assert f"the Spark engine (JVM pid {jvm}) was killed by signal 9" in text, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
        so_far = project.published(target)
        assert so_far == project.expected(1)[: len(so_far)]
    finally:
        if run.process.poll() is None:
            run.kill()
