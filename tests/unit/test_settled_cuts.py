"""What a mirror's base holds, read from its log's commits, and a cut as a mirror's cursor (service/settled_cuts.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from service.settled_cuts import KEEPING_ROWS_VAR, carried_cursor, topic_cursor
from zync.config import project_var
from zync.transactions import Cut


KEEPING_ROWS = project_var(KEEPING_ROWS_VAR)


def commit(user_metadata: dict | None = None, *, data_change: bool | None = True, operation: str = "MERGE",
           parameters: dict | None = None) -> list[str]:
    info = {"operation": operation, **({"userMetadata": json.dumps(user_metadata)} if user_metadata else {}),
            **({"operationParameters": parameters} if parameters else {})}
    texts = [json.dumps({"commitInfo": info})]
    if data_change is not None:
        texts.append(json.dumps({"add": {"path": "part-0.parquet", "dataChange": data_change}}))
    return texts


def cursor(mirror: str, commits: list[tuple[int, list[str]]]):
    return carried_cursor(mirror, commits, KEEPING_ROWS)


def test_the_cursor_is_the_newest_commit_of_the_mirrors_own_past_those_that_change_no_row():
    fold = commit({"zync_mirror": "zync.orders", "cursor": {"0": 41, "1": 7}})
    optimize = commit(data_change=False, operation="OPTIMIZE")
    properties = commit(data_change=None, operation="SET TBLPROPERTIES")
    # the newest version holds the fold's rows: readers are pointed there (its files are the ones VACUUM keeps)
    assert cursor("zync.orders", [(9, optimize), (8, properties), (7, fold)]) == (9, {"0": 41, "1": 7})
    assert cursor("zync.orders", [(7, fold)]) == (7, {"0": 41, "1": 7})
    # another mirror's cursor (a session setting a commit beside it carried) is not this one's
    other = commit({"zync_mirror": "zync.lines", "cursor": {"0": 3}}, data_change=None, operation="SET TBLPROPERTIES")
    assert cursor("zync.orders", [(9, other), (8, fold)]) == (9, {"0": 41, "1": 7})
    assert cursor("zync.orders", [(9, commit({"zync_mirror": "zync.lines", "cursor": {"0": 3}})), (8, fold)]) is None


def test_a_commit_that_may_have_changed_rows_first_means_the_cursor_is_not_known():
    fold = commit({"zync_mirror": "zync.orders", "cursor": {"0": 41}})
    assert cursor("zync.orders", [(9, commit(operation="DELETE")), (8, fold)]) is None
    assert cursor("zync.orders", [(9, commit(operation="WRITE", data_change=None)), (8, fold)]) is None
    # a restore by timestamp names no version to follow
    assert cursor("zync.orders", [(9, commit(operation="RESTORE", parameters={"timestamp": "2026-12-01"})),
                                  (8, fold)]) is None
    assert cursor("zync.orders", []) is None


def test_a_restore_is_followed_to_the_version_it_went_back_to():
    old_fold = commit({"zync_mirror": "zync.orders", "cursor": {"0": 20}})
    new_fold = commit({"zync_mirror": "zync.orders", "cursor": {"0": 41}})
    restore = commit(operation="RESTORE", parameters={"version": "5"})
    # version 8's fold was undone: the base holds version 5's rows, at version 9 (the restore's)
    log = [(9, restore), (8, new_fold), (7, commit(operation="DELETE")), (6, commit(data_change=False, operation="OPTIMIZE")),
           (5, old_fold)]
    assert cursor("zync.orders", log) == (9, {"0": 20})
    assert cursor("zync.orders", [(10, commit(data_change=False, operation="OPTIMIZE")), *log]) == (10, {"0": 20})
    # restored to a version a hand-run DELETE made: not known
    assert cursor("zync.orders", [(9, commit(operation="RESTORE", parameters={"version": 7})), *log[1:]]) is None


def test_the_rule_and_the_macros_name_the_same_operations():
    macro = (Path(__file__).parents[2] / "macros/mirror/cursor/zync_mirror_committed_cursor.sql").read_text()
    assert f"var('{KEEPING_ROWS_VAR}', [])" in macro
    assert {"OPTIMIZE", "SET TBLPROPERTIES"} <= set(KEEPING_ROWS) and not {"MERGE", "WRITE", "DELETE", "RESTORE"} & set(KEEPING_ROWS)


def test_a_cuts_offsets_of_one_topic_as_a_cursor():
    cut = Cut(12, "7", 1000, {("pg.public.orders", 0): 41, ("pg.public.orders", 1): 7, ("pg.public.lines", 0): 3})
    assert topic_cursor(cut, "pg.public.orders") == {"0": 41, "1": 7}
    assert topic_cursor(cut, "pg.public.notes") == {}


class Bases:
    """Mirror bases' logs: table -> commits (each commit's JSON lines), version = index."""

    def __init__(self):
        self.logs: dict[str, list[list[str]]] = {}

    def version(self, name):
        from service.versions import TableVersion
        return TableVersion("t", len(self.logs[name]) - 1) if self.logs.get(name) else None

    def location(self, name):
        return name if name in self.logs else None

    def committed(self, name):
        pass


def test_a_cut_is_recorded_once_every_base_holds_it_and_again_when_a_compaction_moves_a_base(monkeypatch):
    from service import settled_cuts
    from service.project import RawInput, ZyncModel

    bases = Bases()
    monkeypatch.setattr(settled_cuts, "commit_texts", lambda _spark, location, start, end: [
        (v, bases.logs[location][v]) for v in range(start, end + 1)])
    written = []
    cuts = settled_cuts.SettledCuts(None, bases)
    monkeypatch.setattr(cuts, "_append", lambda table, settled: written.append((table, settled.versions)))
    mirrors = [ZyncModel(t, f"zync.pg_{t}", None, (RawInput(f"pg.public.{t}", "zync.raw_pg", pool_view=f"zync.raw_{t}"),),
                         cut_of="pg.transaction") for t in ("orders", "lines")]
    cut = Cut(5, "9", 1000, {("pg.public.orders", 0): 41, ("pg.public.lines", 0): 12})

    def fold(t, offset):
        bases.logs.setdefault(f"zync.pg_{t}__base", []).append(commit({"zync_mirror": f"zync.pg_{t}", "cursor": {"0": offset}}))

    fold("orders", 41)
    fold("lines", 10)  # folded at an earlier cut: lines lags
    assert cuts.after_folds("zync.raw_pg", "pg.transaction", cut, mirrors) is None
    assert cuts.lagging == {"lines"} and written == []
    fold("lines", 12)
    settled = cuts.after_folds("zync.raw_pg", "pg.transaction", cut, mirrors)
    assert settled.versions == {"zync.pg_orders": 0, "zync.pg_lines": 1} and cuts.lagging == set()
    assert written == [("zync.raw_pg__settled", {"zync.pg_orders": 0, "zync.pg_lines": 1})]
    assert cuts.after_folds("zync.raw_pg", "pg.transaction", cut, mirrors) is None  # nothing moved: once
    bases.logs["zync.pg_orders__base"].append(commit(data_change=False, operation="OPTIMIZE"))
    assert cuts.after_folds("zync.raw_pg", "pg.transaction", cut, mirrors).versions == {"zync.pg_orders": 1,
                                                                                      "zync.pg_lines": 1}
    # a hand-run DELETE on a base: its cursor no longer vouches for its rows
    bases.logs["zync.pg_orders__base"].append(commit(operation="DELETE"))
    assert cuts.after_folds("zync.raw_pg", "pg.transaction", cut, mirrors) is None and cuts.lagging == {"orders"}
    assert len(written) == 2


def test_a_project_without_the_var_is_told_where_to_put_it(tmp_path, monkeypatch):
    from zync.errors import ZyncError
    (tmp_path / "dbt_project.yml").write_text("name: mine\nvars:\n  other: 1\n")
    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(tmp_path))
    with pytest.raises(ZyncError, match=f"no var '{KEEPING_ROWS_VAR}' under `vars:`"):
        project_var(KEEPING_ROWS_VAR)
    (tmp_path / "dbt_project.yml").write_text(f"name: mine\nvars:\n  {KEEPING_ROWS_VAR}: [OPTIMIZE]\n")
    assert project_var(KEEPING_ROWS_VAR) == ["OPTIMIZE"]
    # the macro's var(name, []) for a project made before the var: no operation passed over
    (tmp_path / "dbt_project.yml").write_text("name: mine\n")
    assert project_var(KEEPING_ROWS_VAR, ()) == ()
    fold = commit({"zync_mirror": "zync.orders", "cursor": {"0": 41}})
    assert carried_cursor("zync.orders", [(8, fold)], ()) == (8, {"0": 41})
    assert carried_cursor("zync.orders", [(9, commit(data_change=False, operation="OPTIMIZE")), (8, fold)], ()) is None


def test_a_project_zync_init_makes_names_the_same_operations():
    root = Path(__file__).parents[2]
    template = yaml.safe_load((root / "cli/project_template/dbt_project.yml").read_text())
    assert template["vars"][KEEPING_ROWS_VAR] == KEEPING_ROWS
