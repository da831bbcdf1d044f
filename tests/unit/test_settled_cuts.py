"""What a mirror's base holds, read from its log's commits, and a cut as a mirror's cursor (service/settled_cuts.py)."""

from __future__ import annotations

import json

from service.settled_cuts import carried_cursor, topic_cursor
from zync.transactions import Cut


def commit(user_metadata: dict | None = None, *, data_change: bool | None = True, operation: str = "MERGE") -> list[str]:
    info = {"operation": operation, **({"userMetadata": json.dumps(user_metadata)} if user_metadata else {})}
    texts = [json.dumps({"commitInfo": info})]
    if data_change is not None:
        texts.append(json.dumps({"add": {"path": "part-0.parquet", "dataChange": data_change}}))
    return texts


def test_the_cursor_is_the_newest_commit_of_the_mirrors_own_past_those_that_change_no_row():
    fold = commit({"zync_mirror": "zync.orders", "cursor": {"0": 41, "1": 7}})
    optimize = commit(data_change=False, operation="OPTIMIZE")
    properties = commit(data_change=None, operation="SET TBLPROPERTIES")
    assert carried_cursor("zync.orders", [(9, optimize), (8, properties), (7, fold)]) == (7, {"0": 41, "1": 7})
    # another mirror's cursor (a session setting a commit beside it carried) is not this one's
    other = commit({"zync_mirror": "zync.lines", "cursor": {"0": 3}}, data_change=None)
    assert carried_cursor("zync.orders", [(9, other), (8, fold)]) == (8, {"0": 41, "1": 7})


def test_a_commit_that_may_have_changed_rows_first_means_the_cursor_is_not_known():
    fold = commit({"zync_mirror": "zync.orders", "cursor": {"0": 41}})
    assert carried_cursor("zync.orders", [(9, commit(operation="DELETE")), (8, fold)]) is None
    assert carried_cursor("zync.orders", [(9, commit(operation="RESTORE")), (8, fold)]) is None
    assert carried_cursor("zync.orders", []) is None


def test_a_cuts_offsets_of_one_topic_as_a_cursor():
    cut = Cut(12, "7", 1000, {("pg.public.orders", 0): 41, ("pg.public.orders", 1): 7, ("pg.public.lines", 0): 3})
    assert topic_cursor(cut, "pg.public.orders") == {"0": 41, "1": 7}
    assert topic_cursor(cut, "pg.public.notes") == {}
