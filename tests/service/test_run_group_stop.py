"""`zync run` stopped by a signal to its whole process group ends cleanly, whenever it comes.

systemd's KillMode=control-group, supervisord's stopasgroup and `kill -TERM -<pgid>` signal the
Spark driver JVM (a child of the run) together with the run, and the JVM exits at once. A stop is
a stop whoever gets the signal first: the run exits 0, saying it stopped, not that its engine died;
what it published is a prefix of the stream (the step under way finished or abandoned, nothing
lost: the next start resumes it). Once during the start (the JVM launched, no cycle yet), once
during a cycle with work, each at a seeded random moment.
"""

from __future__ import annotations

import os
import random
import subprocess
import time

from testkit.harness import RunProcess, engine_pid, wait_until
from testkit.invoices import invoices_project

SEED = int(os.environ.get("ZYNC_RUN_STOP_SEED", "7"))
EXIT_S = 120.0  # a step under way finishes first when the signal reached the run alone


def _stopped_cleanly(run: RunProcess) -> str:
    try:
        code = run.process.wait(EXIT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"zync run still running {EXIT_S:.0f}s after the stop:\n"
                             + run.log.read_text()[-3000:]) from None
    text = run.log.read_text()
    assert code == 0, text[-3000:]
    assert "cannot go on" not in text and "Traceback" not in text, text[-3000:]
    return text


def test_a_stop_signalled_to_the_whole_process_group_ends_zync_run_with_exit_0(target, tmp_path):
    moments = random.Random(SEED)
    project = invoices_project(tmp_path, "Group")

    starting = RunProcess(project, tmp_path / "start.log", own_group=True)
    try:
        wait_until(lambda: engine_pid(starting.process.pid) is not None, "the Spark engine's launch", starting)
        time.sleep(moments.uniform(0.0, 3.0))
        assert "ready" not in starting.log.read_text(), "the signal was meant for the start: it came too late"
        starting.signal_group()
        _stopped_cleanly(starting)
    finally:
        if starting.process.poll() is None:
            starting.kill()

    cycling = RunProcess(project, tmp_path / "cycle.log", own_group=True)
    try:
        project.produce_batch(target, 1)
        wait_until(lambda: "models: " in cycling.log.read_text(), "the run's first cycle", cycling)
        time.sleep(moments.uniform(0.0, 4.0))
        cycling.signal_group()
        text = _stopped_cleanly(cycling)
        assert "stopped: " in text, text[-3000:]
        so_far = project.published(target)
        assert so_far == project.expected(1)[: len(so_far)]
    finally:
        if cycling.process.poll() is None:
            cycling.kill()
