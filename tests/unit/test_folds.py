"""Which mirrors a `zync run` cycle folds (service/folds.py), over Delta logs stood in for by a fake."""

from __future__ import annotations

from service.folds import FoldPolicy
from service.project import RawInput, ZyncModel
from service.versions import Growth, TableVersion

RAW = "zync.raw_{}"


class FakeVersions:
    """Raw tables with commits of `rows` rows each; a schema change at some versions; bases that exist."""

    def __init__(self, bases: set[str], rows: int = 10, schema_changes: dict[str, set[int]] | None = None):
        self.bases, self.rows, self.schema_changes = bases, rows, schema_changes or {}
        self.read: list[tuple[str, int, int]] = []  # the commit ranges read, to check they are read once

    def version(self, name: str) -> TableVersion | None:
        return TableVersion("base", 3) if name in self.bases else None

    def growth(self, name, since, until, topic=None):
        if since is None or until is None or since.table_id != until.table_id:
            return None
        self.read.append((name, since.version, until.version))
        versions = range(since.version + 1, until.version + 1)
        return Growth(len(versions), self.rows * len(versions),
                      any(v in self.schema_changes.get(name, ()) for v in versions))


def mirror(name: str) -> ZyncModel:
    return ZyncModel(name, f"zync.{name}", None, (RawInput(name, RAW.format(name)),))


def at(version: int) -> TableVersion:
    return TableVersion("raw", version)


def test_a_mirror_folds_after_n_commits_or_m_rows_and_the_log_is_read_once():
    models = [mirror("a"), mirror("b")]
    versions = FakeVersions({"zync.a__base", "zync.b__base"})
    policy = FoldPolicy(versions, after_commits=5, after_rows=1000, per_cycle=0)
    ran_at = {"a": {RAW.format("a"): at(10)}, "b": {RAW.format("b"): at(10)}}
    due = {"a": {RAW.format("a"): at(14)}, "b": {RAW.format("b"): at(12)}}
    assert policy.choose(due, models, ran_at) == {}
    due = {"a": {RAW.format("a"): at(15)}, "b": {RAW.format("b"): at(13)}}
    assert set(policy.choose(due, models, ran_at)) == {"a"}  # 5 commits since its last fold
    # counted on from where the last cycle stopped, not from the last fold again
    assert [r for r in versions.read if r[0] == RAW.format("a")] == [(RAW.format("a"), 10, 14), (RAW.format("a"), 14, 15)]
    versions.rows = 600  # b: two big commits more
    assert set(policy.choose({"b": {RAW.format("b"): at(15)}}, models, ran_at)) == {"b"}


def test_every_mirror_without_a_base_is_built_at_once_and_the_other_folds_are_bounded():
    models = [mirror(n) for n in "abcdef"]
    versions = FakeVersions({"zync.b__base", "zync.c__base", "zync.d__base", "zync.f__base"},
                            schema_changes={RAW.format("c"): {12}, RAW.format("f"): {11}})
    policy = FoldPolicy(versions, after_commits=3, after_rows=10**9, per_cycle=1)
    ran_at = {n: {RAW.format(n): at(10)} for n in "bcdf"}
    due = {"a": {RAW.format("a"): at(1)}, "b": {RAW.format("b"): at(11)}, "c": {RAW.format("c"): at(12)},
           "d": {RAW.format("d"): at(20)}, "e": {RAW.format("e"): at(1)}, "f": {RAW.format("f"): at(11)}}
    # a and e have no base (never built, or a table-style mirror): both are built, past the bound of one;
    # c's and f's raw tables have a new schema, and one of them fits the bound: c, the more commits behind.
    # d is due by growth alone: it waits for a cycle with no other fold
    assert set(policy.choose(due, models, ran_at)) == {"a", "e", "c"}
    ran_at.update({n: due[n] for n in "aec"})
    versions.bases.update({"zync.a__base", "zync.e__base"})
    assert set(policy.choose({n: due[n] for n in "bdf"}, models, ran_at)) == {"f"}
    ran_at["f"] = due["f"]
    assert set(policy.choose({n: due[n] for n in "bd"}, models, ran_at)) == {"d"}
    # a first build takes a growth fold's place too: the growth fold waits for a cycle without folds
    versions.bases.discard("zync.e__base")
    assert set(policy.choose({"d": due["d"], "e": {RAW.format("e"): at(2)}}, models, ran_at)) == {"e"}
    # --once: everything that moved, unbounded
    assert policy.choose(due, models, ran_at, everything=True) == due


def test_outputs_are_never_held_back():
    output = ZyncModel("out", "zync.out", "Out", (RawInput("a", RAW.format("a")),))
    policy = FoldPolicy(FakeVersions(set()), per_cycle=1)
    due = {"out": {RAW.format("a"): at(2)}}
    assert policy.choose(due, [output], {"out": {RAW.format("a"): at(1)}}) == due


def test_folds_due_by_growth_run_one_a_cycle_and_only_in_a_cycle_without_other_folds():
    models = [mirror(n) for n in "abcd"]
    versions = FakeVersions({"zync.b__base", "zync.c__base", "zync.d__base"})
    policy = FoldPolicy(versions, after_commits=3, after_rows=10**9, per_cycle=4)
    ran_at = {n: {RAW.format(n): at(10)} for n in "bcd"}
    # b, c and d all reached the threshold in the same cycle (a steady stream), d the furthest
    grown = {"b": {RAW.format("b"): at(13)}, "c": {RAW.format("c"): at(14)}, "d": {RAW.format("d"): at(15)}}
    # a has no base: it is built, and the grown ones wait
    assert set(policy.choose({"a": {RAW.format("a"): at(1)}, **grown}, models, ran_at)) == {"a"}
    versions.bases.add("zync.a__base")
    ran_at["a"] = {RAW.format("a"): at(1)}
    assert set(policy.choose(grown, models, ran_at)) == {"d"}
    ran_at["d"] = grown.pop("d")
    assert set(policy.choose(grown, models, ran_at)) == {"c"}
    # no bound at all: every grown mirror folds
    unbounded = FoldPolicy(versions, after_commits=3, after_rows=10**9, per_cycle=0)
    assert set(unbounded.choose(grown, models, ran_at)) == {"b", "c"}


def test_a_mirror_built_as_its_view_alone_folds_by_growth_and_its_first_fold_makes_its_base():
    models = [mirror("a"), mirror("b")]
    versions = FakeVersions(set())  # neither has a base
    policy = FoldPolicy(versions, after_commits=3, after_rows=10**9, per_cycle=4)
    ran_at = {"a": {RAW.format("a"): at(10)}, "b": {RAW.format("b"): at(10)}}
    due = {"a": {RAW.format("a"): at(12)}, "b": {RAW.format("b"): at(12)}}
    # a's last run here made its view alone: it counts its raw table's growth since, as a folded mirror;
    # b's did not (never built, or a view made before a restart): it is built now
    assert set(policy.choose(due, models, ran_at, deferred={"a"})) == {"b"}
    ran_at["b"] = due.pop("b")
    assert policy.choose(due, models, ran_at, deferred={"a"}) == {}
    # grown past the threshold: its fold is due, the run that makes its base
    assert set(policy.choose({"a": {RAW.format("a"): at(13)}}, models, ran_at, deferred={"a"})) == {"a"}
    # a deferred mirror with no run known here is built as one without a base
    assert set(policy.choose({"a": {RAW.format("a"): at(11)}}, models, {}, deferred={"a"})) == {"a"}


def test_a_pooled_mirror_folds_by_its_rows_not_the_pools_commits():
    pooled = ZyncModel("p", "zync.p", None, (RawInput("p", "zync.raw_pool", pool_view="zync.raw_p"),))
    plain = mirror("a")
    policy = FoldPolicy(FakeVersions(bases={"zync.p__base", "zync.a__base"}, rows=1), after_commits=5,
                        after_rows=1_000)
    ran_at = {"p": {"zync.raw_pool": at(0)}, "a": {RAW.format("a"): at(0)}}
    due = {"p": {"zync.raw_pool": at(10)}, "a": {RAW.format("a"): at(10)}}
    # 10 commits of a row each: past 5 commits for the raw table of its own, far from 1,000 rows for the pool.
    assert set(policy.choose(due, [pooled, plain], ran_at)) == {"a"}
    policy.after_rows = 10
    assert "p" in policy.choose({"p": due["p"]}, [pooled], ran_at)


def test_a_pooled_mirror_is_not_starved_of_growth_folds_by_raw_tables_that_grow_too():
    pooled = ZyncModel("p", "zync.p", None, (RawInput("p", "zync.raw_pool", pool_view="zync.raw_p"),))
    plain = mirror("a")
    policy = FoldPolicy(FakeVersions(bases={"zync.p__base", "zync.a__base"}, rows=10), after_commits=5,
                        after_rows=50, per_cycle=4)
    ran_at = {"p": {"zync.raw_pool": at(0)}, "a": {RAW.format("a"): at(0)}}
    # both grew past their thresholds: a by 6 commits (1.2 times its 5), the pooled mirror by 100 rows of
    # its own (twice its 50) and no commits it counts; the one grown further folds
    due = {"p": {"zync.raw_pool": at(10)}, "a": {RAW.format("a"): at(6)}}
    assert set(policy.choose(due, [pooled, plain], ran_at)) == {"p"}
    ran_at["p"] = due.pop("p")
    assert set(policy.choose({**due, "p": {"zync.raw_pool": at(12)}}, [pooled, plain], ran_at)) == {"a"}


class PoolVersions(FakeVersions):
    """A raw pool whose every commit adds `rows[topic]` rows of each topic."""

    def __init__(self, bases: set[str], rows: dict[str, int]):
        super().__init__(bases)
        self.topic_rows = rows

    def growth(self, name, since, until, topic=None):
        grown = super().growth(name, since, until, topic)
        return grown and Growth(grown.commits, self.topic_rows.get(topic, 0) * grown.commits, grown.schema_changed)


def at_cut(name: str, connector: str | None) -> ZyncModel:
    return ZyncModel(name, f"zync.{name}", None, (RawInput(f"pg.public.{name}", "zync.raw_pool",
                                                            pool_view=f"zync.raw_{name}"),), cut_of=connector)


def test_with_settled_cuts_a_connectors_mirrors_fold_together_when_one_folds_or_they_are_to_settle():
    models = [at_cut("orders", "pg.transaction"), at_cut("lines", "pg.transaction"), at_cut("notes", "pg.transaction"),
              at_cut("audit", None), at_cut("other", "other.transaction")]
    rows = {"pg.public.orders": 30, "pg.public.lines": 2, "pg.public.audit": 2, "pg.public.other": 2}
    policy = FoldPolicy(PoolVersions({f"zync.{m.name}__base" for m in models}, rows), after_rows=25, per_cycle=4)
    ran_at = {m.name: {"zync.raw_pool": at(0)} for m in models}
    due = {m.name: {"zync.raw_pool": at(1)} for m in models}
    # orders grew past its threshold; lines grew a little and folds with it, to the same cut; notes (no row of
    # its topic since its fold) holds that cut already; the mirrors of no cut or another's wait their turn.
    assert set(policy.choose(due, models, ran_at, settling=set())) == {"orders", "lines"}
    # a base found not to hold the cut folds with them, grown or not
    assert set(policy.choose(due, models, ran_at, settling=set(), lagging={"notes"})) == {"orders", "lines", "notes"}
    # settled cuts off: the connector's mirrors fold as any others
    assert set(policy.choose(due, models, ran_at)) == {"orders"}
    # none due by growth: a connector to settle folds every mirror of it that grew, and those lagging
    policy.after_rows = 1_000
    assert set(policy.choose(due, models, ran_at, settling=set())) == set()
    assert set(policy.choose(due, models, ran_at, settling={"pg.transaction"})) == {"orders", "lines"}
    assert set(policy.choose(due, models, ran_at, settling={"other.transaction"})) == {"other"}
