"""bench/wide.py's pure logic: the seeded table choice, percentiles, when a change is visible (in a mirror
from the Delta logs on disk, in PostgreSQL from the sink's arrivals), the backlog."""

from __future__ import annotations

import json
import os
import random
from collections import Counter

import pytest

from bench.wide import (
    Arrival,
    Commit,
    MirrorLog,
    Source,
    arrival_visible,
    backlog,
    commit_reach,
    explicit_mirror_file,
    pattern_mirror_file,
    percentile,
    table_chooser,
    visible_at,
    zipf_weights,
)


def test_the_zipf_choice_is_seeded_and_skewed():
    draws = [table_chooser(50, "zipf", random.Random(7)) for _ in range(2)]
    first, second = ([choose() for _ in range(5000)] for choose in draws)
    assert first == second  # the same seed, the same tables
    counts = Counter(first)
    assert set(counts) <= set(range(50))
    assert counts[0] == max(counts.values())  # the first table is the hottest
    # Zipf's law with s = 1: table 1 about twice as often as table 2.
    assert 1.6 < counts[0] / counts[1] < 2.5
    assert zipf_weights(3) == [1.0, 0.5, 1 / 3]


def test_the_uniform_choice_spreads_evenly():
    choose = table_chooser(10, "uniform", random.Random(1))
    counts = Counter(choose() for _ in range(10_000))
    assert set(counts) == set(range(10)) and max(counts.values()) < 1.2 * min(counts.values())
    with pytest.raises(ValueError):
        table_chooser(10, "normal", random.Random(1))


def test_percentile_is_the_nearest_rank():
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 0.5) == 51
    assert percentile(values, 0.99) == 99
    assert percentile(values, 1.0) == 100
    assert percentile([3.0], 0.95) == 3.0


def cursor_commit(mirror: str, cursor: dict | None, operation: str = "MERGE") -> list[dict]:
    info = {"operation": operation}
    if cursor is not None:
        info["userMetadata"] = json.dumps({"zync_mirror": f"zync.{mirror}", "cursor": cursor})
    return [{"commitInfo": info}, {"add": {"path": "part-0.parquet", "stats": "{}"}}]


def raw_add(partition: int, low: int, high: int, high_partition: int | None = None) -> dict:
    stats = {"numRecords": high - low + 1,
             "minValues": {"kafka": {"topic": "t", "partition": partition, "offset": low}},
             "maxValues": {"kafka": {"topic": "t", "partition": partition if high_partition is None
                                     else high_partition, "offset": high}}}
    return {"add": {"path": f"part-{low}.parquet", "stats": json.dumps(stats)}}


def test_a_commit_reaches_its_cursor_or_its_added_offsets():
    assert commit_reach(cursor_commit("m", {"0": 9}), "m") == {0: 9}
    assert commit_reach(cursor_commit("M", {"0": 9}), "m") == {0: 9}  # names are case-insensitive
    # The cursor setting is session-wide: another mirror's cursor on this commit is not this one's.
    assert commit_reach(cursor_commit("other", {"0": 99}), "m") == {}
    assert commit_reach(cursor_commit("m", None, "OPTIMIZE"), "m") == {}
    # A raw table: the largest offset per partition of the files it adds; a file over two partitions
    # says nothing about either.
    assert commit_reach([{"commitInfo": {}}, raw_add(0, 0, 9), raw_add(0, 10, 14), raw_add(1, 0, 3),
                         raw_add(0, 0, 50, high_partition=1)], None) == {0: 14, 1: 3}


def test_visible_at_is_the_first_commit_that_reached_the_offset():
    commits = [Commit(0, 100.0, {0: 9}), Commit(1, 101.0, {}), Commit(2, 105.0, {0: 15}),
               Commit(3, 107.0, {0: 12})]  # a compaction re-adding older offsets comes later
    assert visible_at(commits, 0, 5) == 100.0
    assert visible_at(commits, 0, 9) == 100.0
    assert visible_at(commits, 0, 12) == 105.0
    assert visible_at(list(reversed(commits)), 0, 12) == 105.0  # by version, whatever the order given
    assert visible_at(commits, 0, 16) is None
    assert visible_at(commits, 1, 0) is None


def write_log(folder, versions: list[list[dict]], mtimes: list[float]) -> None:
    log = folder / "_delta_log"
    log.mkdir(parents=True)
    for version, (actions, mtime) in enumerate(zip(versions, mtimes)):
        path = log / f"{version:020d}.json"
        path.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
        os.utime(path, (mtime, mtime))
    (log / f"{len(versions):020d}.checkpoint.parquet").write_bytes(b"")  # not a commit


def test_a_mirror_table_is_read_from_its_own_log(tmp_path):
    write_log(tmp_path / "m", [cursor_commit("m", {"0": 1999}, "CREATE OR REPLACE TABLE AS SELECT"),
                               cursor_commit("m", None, "OPTIMIZE"), cursor_commit("m", {"0": 2010})],
              [1000.0, 1001.0, 1004.5])
    write_log(tmp_path / "raw_t", [[raw_add(0, 0, 2010)]], [999.0])
    mirror = MirrorLog(tmp_path, "m", "raw_t")
    assert mirror.kind == "table"
    assert visible_at(mirror.commits(), 0, 2005) == 1004.5
    assert visible_at(mirror.commits(), 0, 1999) == 1000.0
    assert mirror.reach() == 2010


def test_a_merge_on_read_mirror_is_visible_with_its_raw_commit(tmp_path):
    # No table named m: a view over m__base and the raw table.
    write_log(tmp_path / "m__base", [cursor_commit("m", {"0": 1999})], [1010.0])
    write_log(tmp_path / "raw_t", [[raw_add(0, 0, 1999)], [raw_add(0, 2000, 2004)], [raw_add(0, 2005, 2010)]],
              [1000.0, 1020.0, 1022.0])
    mirror = MirrorLog(tmp_path, "m", "raw_t")
    assert mirror.kind == "view"
    assert visible_at(mirror.commits(), 0, 100) == 1010.0  # the view was there only once its base was
    assert visible_at(mirror.commits(), 0, 2003) == 1020.0
    assert visible_at(mirror.commits(), 0, 2010) == 1022.0
    assert visible_at(mirror.commits(), 0, 2011) is None
    assert MirrorLog(tmp_path, "other", "raw_t").kind is None  # not built yet


def test_a_mirror_view_without_a_base_is_visible_from_the_run_that_made_it(tmp_path):
    # No m__base yet: zync run made the view alone (a small first build); its log says when.
    write_log(tmp_path / "raw_t", [[raw_add(0, 0, 1999)], [raw_add(0, 2000, 2004)]], [1000.0, 1020.0])
    built = {"m": 1008.0}
    mirror = MirrorLog(tmp_path, "m", "raw_t", built.get)
    assert mirror.kind == "view"
    assert visible_at(mirror.commits(), 0, 100) == 1008.0
    assert visible_at(mirror.commits(), 0, 2004) == 1020.0
    assert MirrorLog(tmp_path, "other", "raw_t", built.get).kind is None  # not built yet
    # Its first fold makes the base: the view was there since the earlier of the two.
    write_log(tmp_path / "m__base", [cursor_commit("m", {"0": 2004})], [1030.0])
    assert visible_at(mirror.commits(), 0, 100) == 1008.0


def test_a_change_is_in_postgresql_with_its_row_or_a_newer_one():
    arrivals = [Arrival("I", 5, 10.0), Arrival("U", 9, 12.0), Arrival("U", 12, 15.0)]
    assert arrival_visible(5, arrivals) == 10.0
    assert arrival_visible(7, arrivals) == 12.0  # seq 7 was folded into the row of seq 9
    assert arrival_visible(12, arrivals) == 15.0
    assert arrival_visible(13, arrivals) is None
    # A delete carries the deleted row's seq; it is the key's last change, so it covers every earlier one.
    assert arrival_visible(13, arrivals + [Arrival("D", 12, 16.0)]) == 16.0


def test_the_backlog_counts_what_was_produced_and_not_yet_visible():
    pairs = [(0.0, 2.0), (1.0, 5.0), (2.0, None), (6.0, 7.0)]
    assert backlog(pairs, 1.5) == 2
    assert backlog(pairs, 4.0) == 2
    assert backlog(pairs, 10.0) == 1  # the one never seen


def test_the_pattern_entry_makes_the_mirrors_the_explicit_entries_name(tmp_path):
    from compiler.mirrors import expand_patterns, load_mirrors

    topics = ["w003u.public.t001", "w003u.public.t002", "w003u.public.t003"]
    found = {}
    for kind, text in (("explicit", explicit_mirror_file("w003u", topics)),
                       ("pattern", pattern_mirror_file("w003u", topics))):
        path = tmp_path / f"{kind}.yml"
        path.write_text(text)
        mirrors = expand_patterns([load_mirrors(path)], topics + ["w010u.public.t001", "other"])[0].mirrors
        found[kind] = sorted((m.model, m.topic, m.table, m.delete) for m in mirrors)
    assert found["pattern"] == found["explicit"]
    assert found["pattern"][1] == ("w003u_t002_mirror", "w003u.public.t002", "raw_w003u_public_t002", "hard")


def pool_add(offsets: dict[str, int], cut: dict | None) -> dict:
    """A raw pool's file: its topics' largest offsets (partition 0), and the cut its commit carries."""
    from zync.pools import topics_tag
    from zync.transactions import CUT_TAG

    tags = topics_tag({t: {0: (1, o)} for t, o in offsets.items()})
    if cut is not None:
        tags[CUT_TAG] = json.dumps(cut)
    return {"add": {"path": "part-0.parquet", "stats": json.dumps({"minValues": {"kafka": {}},
                                                                   "maxValues": {"kafka": {}}}), "tags": tags}}


def test_a_pool_commit_under_a_cut_reaches_the_cut_not_its_rows(tmp_path):
    from zync.transactions import Cut

    a, b, connector = "s.public.a", "s.public.b", "s.transaction"
    cut = {connector: Cut(3, "1001", 5, {(a, 0): 7, (b, 0): 2}).to_dict()}
    commit = [{"commitInfo": {}}, pool_add({a: 10, b: 4, connector: 3}, cut)]
    assert commit_reach(commit, None, a) == {0: 10}  # without the cut: what the file holds
    assert commit_reach(commit, None, a, connector) == {0: 7}
    assert commit_reach(commit, None, b, connector) == {0: 2}
    assert commit_reach([pool_add({a: 10}, None)], None, a, connector) == {}  # no cut: nothing shows
    assert commit_reach([pool_add({a: 10}, {"other.transaction": cut[connector]})], None, a, connector) == {}
    # The mirror's view over the pool: visible with the commit whose cut reached the change.
    write_log(tmp_path / "pool", [[pool_add({a: 10}, {connector: Cut().to_dict()})], commit], [1000.0, 1003.0])
    mirror = MirrorLog(tmp_path, "m", "pool", {"m": 990.0}.get, a, connector)
    assert visible_at(mirror.commits(), 0, 7) == 1003.0 and visible_at(mirror.commits(), 0, 8) is None


def recorded_source(tables: int = 6, seed: int = 1) -> tuple[Source, list[tuple[str, int, dict | None]]]:
    """bench/wide.py's source with transactions, producing into a list: (topic, offset, value)."""
    from testkit import debezium

    source = Source.__new__(Source)
    source.debezium, source.server = debezium, "w006u"
    source.tables = [f"t{i:03d}" for i in range(1, tables + 1)]
    source.topics = [debezium.topic("w006u", "public", t) for t in source.tables]
    source.writers = [(None, None)] * tables
    source.transactions, source.transaction_topic = True, debezium.transaction_topic("w006u")
    source.transaction_writers = (None, None)
    source.rng, source.shapes = random.Random(seed), random.Random(seed + 2)
    source.xid, source.transaction_sizes, source.transaction_tables = 1000, [], []
    source.rows, source.live = [{} for _ in range(tables)], [[] for _ in range(tables)]
    source.next_id, source.seq, source.records, source.changes, source.failed = [1] * tables, 0, 0, [], []
    produced: list[tuple[str, int, dict | None]] = []
    offsets: Counter = Counter()

    def produce(topic, writers, key, value, change=None):
        if change is not None:
            change.offset = offsets[topic]
        produced.append((topic, offsets[topic], value))
        offsets[topic] += 1

    source._produce = produce
    source.flush = lambda: None
    return source, produced


def test_the_synthetic_transactions_are_whole_and_move_the_cut_to_their_last_end():
    from ingest.transaction_cut import CutState
    from zync.transactions import boundary_of, change_of

    source, produced = recorded_source()
    source.snapshot(3)
    snapshot = [v["source"]["snapshot"] for _, _, v in produced]
    assert snapshot == ["true"] * 17 + ["last"]
    choose = table_chooser(6, "uniform", random.Random(2))
    changes = sum(source.transaction(choose) for _ in range(200))
    assert changes == len(source.changes) and len(source.transaction_sizes) == 200
    assert set(source.transaction_sizes) == {1, 2, 3, 4, 5} and set(source.transaction_tables) == {1, 2, 3}
    # Debezium's order: each transaction's BEGIN, its changes, its END; its changes' ids share its xid.
    streamed = produced[18:]
    begins = [i for i, (t, _, v) in enumerate(streamed) if t == source.transaction_topic and v["status"] == "BEGIN"]
    assert len(begins) == 200 and begins[0] == 0
    first = streamed[:begins[1]]
    end = first[-1][2]
    assert end["status"] == "END" and end["event_count"] == source.transaction_sizes[0]
    data = [v for t, _, v in first[1:-1] if v is not None]  # the tombstones carry nothing
    assert {v["transaction"]["id"].split(":")[0] for v in data} == {"1001"} == {end["id"].split(":")[0]}
    assert [v["transaction"]["total_order"] for v in data] == list(range(1, len(data) + 1))
    assert {c["data_collection"]: c["event_count"] for c in end["data_collections"]} == dict(
        Counter(f"public.{v['source']['table']}" for v in data))

    # Fed to the cut as the pool feeds it: every transaction whole, every change behind the cut.
    cut = CutState("w006u", lambda topic: True)
    cut.changes(change_of(t, 0, o, v) for t, o, v in produced if t != source.transaction_topic)
    cut.boundaries([b for b in (boundary_of(o, v) for t, o, v in produced if t == source.transaction_topic) if b],
                   now=0)
    after = cut.advance(now=0)
    assert after.end_offset == 2 * 200 - 1 and after.expired == 0 and cut.waiting_changes == 0
    last = {}
    for t, o, _ in produced:
        last[t] = o
    assert after.offsets == {(t, 0): o for t, o in last.items() if t != source.transaction_topic}


def test_the_pattern_entry_can_ask_for_whole_transactions(tmp_path):
    from compiler.mirrors import expand_patterns, load_mirrors

    topics = ["w003up.public.t001", "w003up.public.t002"]
    path = tmp_path / "pool.yml"
    path.write_text(pattern_mirror_file("w003up", topics, "raw_pool_w003up", transactions=True))
    mirrors = expand_patterns([load_mirrors(path)], topics + ["w003up.transaction"])[0].mirrors
    assert sorted((m.topic, m.pool, m.transactions) for m in mirrors) == [
        (t, "raw_pool_w003up", "w003up.transaction") for t in topics]


def test_the_cut_figures_count_the_commits_that_moved_it(tmp_path):
    from bench.wide import DeltaLog, cut_figures
    from zync.transactions import Cut

    a, connector = "s.public.a", "s.transaction"
    cuts = [Cut(), Cut(1, "1001", 5, {(a, 0): 3}), Cut(1, "1001", 5, {(a, 0): 3}), Cut(3, "1002", 6, {(a, 0): 5})]
    write_log(tmp_path / "pool", [[pool_add({a: 9}, {connector: c.to_dict()})] for c in cuts],
              [1000.0, 1002.0, 1004.0, 1006.0])
    found = cut_figures(DeltaLog(tmp_path / "pool", None), connector)
    assert found == {"pool_commits_moving_it": 2, "end_offset": 3, "expired": 0, "partitions": 1}
