"""How `zync run` sets the Spark engine for the runs of a cycle, apart from the cycle itself.

The settings are measured choices for small inputs (a cycle carries what arrived since the last
one); the benchmarks that measured them import them from here, and so do the tests that run
models as `zync run` does. Each applies to a block only, and puts the session back after it.
"""

from __future__ import annotations

from contextlib import contextmanager

from zync.spark import session_conf

ADAPTIVE_EXECUTION = "spark.sql.adaptive.enabled"


@contextmanager
def without_adaptive_execution(spark):
    """Spark's adaptive query execution off for the block, as it was after.

    A cycle's models run over what arrived since the last cycle: small inputs,
    where AQE's re-planning after every shuffle stage of the output model's
    plan costs more than it saves. Measured on this project's 2-core machine
    (~1,200 events per cycle, three alternations): the model's query 2.4-2.6 s
    instead of 3.4-4.3 s, its INSERT 5.2-5.5 s instead of 6.3-7.7 s. Only this
    process's dbt stage: a hand-run `dbt run` keeps the session's setting.
    """
    with session_conf(spark, {ADAPTIVE_EXECUTION: "false"}):
        yield


# A small run's statements run interpreted: no Java code is generated and compiled for them.
WHOLE_STAGE_CODEGEN, CODEGEN_FACTORY = "spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode"


@contextmanager
def interpreted(spark):
    """Spark's whole-stage code generation and its generated expressions off for the block, as they were after.

    Spark compiles Java for every stage and most expressions of a query, and
    caches the classes by their code; but the cursors' offsets are literals in
    an output model's plan, so every run's code differs and compiles anew
    (Spark's CodegenMetrics: ~200 classes for the invoices model's INSERT,
    ~40 for its two caches of pending records, every run), which costs a run
    of a few events more than its rows cost interpreted. Measured on this
    project's 2-core machine (`bench/cycle_probe.py --cycles 8 --events 4
    --alt small=off --alt small=on`, alternating, alone): the writing run
    4.8-8.6 s instead of 8.5-12.7 s, its INSERT 2.7-4.7 s instead of 5.4-7.5 s,
    the two caches 0.9-1.8 s instead of 1.3-2.8 s; still ahead at 20,000
    events a cycle (INSERT 5.2-5.8 s against 7.2-7.7 s). Only for small runs
    (service/run.py Service.small_models); a backfill keeps the compiled plan. The factory
    mode is an internal Spark setting (NO_CODEGEN: the interpreted projections,
    predicates and orderings Spark falls back to when code does not compile).
    """
    with session_conf(spark, {WHOLE_STAGE_CODEGEN: "false", CODEGEN_FACTORY: "NO_CODEGEN"}):
        yield


@contextmanager
def small_run_engine(spark):
    """How `zync run` executes a small run of an output model: interpreted, adaptive execution off."""
    with without_adaptive_execution(spark), interpreted(spark):
        yield
