"""A connector's cut, as pure logic: whole transactions only, in commit order, per partition by position;
duplicates, tables not ingested, the snapshot, expiry and the cut's JSON."""

from __future__ import annotations

import json

from ingest.transaction_cut import CutState
from zync.transactions import (END, SNAPSHOT, Boundary, Change, Cut, boundary_of, change_of, connector_prefix,
                               cut_fields)

ORDERS, LINES, AUDIT = "pg.public.orders", "pg.public.lines", "pg.public.audit"


def state(**options) -> CutState:
    return CutState("pg", lambda topic: topic != AUDIT, **options)


def end(offset: int, transaction: str, counts: dict[str, int], ts_ms: int = 1000) -> Boundary:
    return Boundary(offset, END, transaction, ts_ms, counts)


def test_a_transaction_is_behind_the_cut_only_once_each_of_its_tables_has_all_its_changes():
    cut = state()
    # Transaction 7: an order and two lines. Its order and one line are in, and its END.
    cut.changes([Change(ORDERS, 0, 0, "7", 1), Change(LINES, 0, 0, "7", 1)])
    cut.boundaries([Boundary(0, "BEGIN", "7"), end(1, "7", {"public.orders": 1, "public.lines": 2})], now=0)
    assert cut.advance(now=1) == Cut()  # half of it: nothing shows
    assert cut.waiting_transactions == 1 and cut.waiting_changes == 2
    cut.changes([Change(LINES, 0, 1, "7", 2)])
    after = cut.advance(now=2)
    assert (after.end_offset, after.transaction, after.committed_ms) == (1, "7", 1000)
    assert after.offsets == {(ORDERS, 0): 0, (LINES, 0): 1}
    assert cut.waiting_transactions == 0 and cut.waiting_changes == 0


def test_a_later_whole_transaction_waits_for_an_earlier_one_and_positions_hold_per_partition():
    cut = state()
    cut.changes([Change(ORDERS, 0, 0, "1", 1),                           # transaction 1: not whole yet
                 Change(ORDERS, 0, 1, "2", 1), Change(LINES, 0, 0, "2", 1)])  # transaction 2: whole
    cut.boundaries([end(1, "1", {"public.orders": 1, "public.lines": 1}),
                    end(3, "2", {"public.orders": 1, "public.lines": 1})], now=0)
    assert cut.advance(now=1) == Cut()
    cut.changes([Change(LINES, 0, 1, "1", 1)])  # transaction 1's line: after 2's in its partition
    after = cut.advance(now=2)
    assert after.end_offset == 3 and after.offsets == {(ORDERS, 0): 1, (LINES, 0): 1}


def test_a_change_sent_twice_counts_once_and_a_table_not_ingested_is_not_waited_for():
    cut = state()
    cut.changes([Change(ORDERS, 0, 0, "5", 1), Change(ORDERS, 0, 1, "5", 1)])  # Debezium sent it again
    cut.boundaries([end(0, "5", {"public.orders": 2, "public.audit": 4})], now=0)
    assert cut.advance(now=1).end_offset == -1  # two changes of orders counted, one distinct
    cut.changes([Change(ORDERS, 0, 2, "5", 2)])
    assert cut.advance(now=2).offsets == {(ORDERS, 0): 2}


def test_the_snapshot_shows_whole_once_its_last_record_is_in():
    cut = state()
    cut.changes([Change(ORDERS, 0, 0, SNAPSHOT), Change(LINES, 0, 0, SNAPSHOT)])
    assert cut.advance(now=0).offsets == {}
    cut.changes([Change(LINES, 0, 1, SNAPSHOT, snapshot_last=True)])
    assert cut.advance(now=1).offsets == {(ORDERS, 0): 0, (LINES, 0): 1}


def test_a_transaction_never_whole_expires_after_the_bound_and_is_counted():
    cut = state(expire_after_s=60)
    cut.changes([Change(ORDERS, 0, 0, "9", 1), Change(ORDERS, 0, 1, "10", 1)])
    cut.boundaries([end(0, "9", {"public.orders": 1, "public.lines": 1}), end(1, "10", {"public.orders": 1})], now=0)
    assert cut.advance(now=59).end_offset == -1
    assert not cut.expiry_due(now=59) and cut.expiry_due(now=60)  # due by time alone, nothing new taken
    after = cut.advance(now=60)
    assert (after.end_offset, after.expired, after.offsets) == (1, 1, {(ORDERS, 0): 1})
    assert not cut.expiry_due(now=1000)
    cut.changes([Change(LINES, 0, 0, "9", 1)])  # its lost line, late: it shows, the cut does not wait for it
    assert cut.advance(now=61).offsets == {(ORDERS, 0): 1, (LINES, 0): 0}


def test_a_resumed_cut_skips_what_is_behind_it_and_round_trips_as_json():
    before = Cut(4, "3", 1234, {(ORDERS, 0): 6, (LINES, 1): -1}, expired=2)
    assert Cut.from_dict(json.loads(json.dumps(before.to_dict()))) == before
    cut = state(cut=before)
    cut.changes([Change(ORDERS, 0, 6, "3", 1), Change(ORDERS, 0, 7, "4", 1)])
    cut.boundaries([end(4, "3", {"public.orders": 1}), end(5, "4", {"public.orders": 1})], now=0)
    after = cut.advance(now=0)
    assert (after.end_offset, after.offsets[(ORDERS, 0)], after.expired) == (5, 7, 2)


def test_debezium_values_become_changes_and_boundaries():
    assert connector_prefix("pg.public.orders") == "pg" and connector_prefix("prod.pg.public.orders") == "prod.pg"
    # PostgreSQL's ids are <xid>:<lsn of the event>: a transaction's changes, BEGIN and END share the xid only.
    streamed = {"op": "u", "source": {"snapshot": "false"},
                "transaction": {"id": "571:53195832", "total_order": 2, "data_collection_order": 1}}
    assert change_of(ORDERS, 0, 9, streamed) == Change(ORDERS, 0, 9, "571", 1)
    gtid = {**streamed, "transaction": {"id": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23", "data_collection_order": 1}}
    assert change_of(ORDERS, 0, 9, gtid).transaction == "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"  # MySQL's GTID
    assert change_of(ORDERS, 0, 1, {"op": "r", "source": {"snapshot": "last"}, "transaction": None}) \
        == Change(ORDERS, 0, 1, SNAPSHOT, snapshot_last=True)
    assert change_of(ORDERS, 0, 2, None) == Change(ORDERS, 0, 2, None)
    event = {"status": "END", "id": "571:53196000", "event_count": 3, "ts_ms": 77,
             "data_collections": [{"data_collection": "public.orders", "event_count": 1},
                                  {"data_collection": "public.lines", "event_count": 2}]}
    assert boundary_of(4, event) == end(4, "571", {"public.orders": 1, "public.lines": 2}, ts_ms=77)
    assert boundary_of(3, {"status": "BEGIN", "id": "571:53195832"}).status == "BEGIN"
    assert boundary_of(5, None) is None


def test_a_transaction_of_100000_changes_spread_over_batches_shows_at_once():
    cut = state()
    for batch in range(10):  # ten batches of 10,000 changes, then its END
        first = batch * 10_000
        cut.changes(Change(LINES, 0, offset, "big", offset + 1) for offset in range(first, first + 10_000))
        assert cut.advance(now=batch).offsets == {}
    cut.changes([Change(ORDERS, 0, 0, "big", 1)])
    cut.boundaries([end(1, "big", {"public.lines": 100_000, "public.orders": 1})], now=10)
    after = cut.advance(now=11)
    assert after.end_offset == 1 and after.offsets == {(LINES, 0): 99_999, (ORDERS, 0): 0}
    assert cut.waiting_changes == 0


def test_a_connector_without_transaction_metadata_shows_its_changes_as_they_come():
    """Without provide.transaction.metadata the values carry no transaction block and no BEGIN or END
    arrives: each change is behind the cut as soon as the pool takes it, and the cut names no
    transaction (what `zync etl status` reports)."""
    cut = state()
    values = [{"op": "c", "after": {"id": 1}, "source": {"snapshot": "false"}},
              {"op": "u", "after": {"id": 1}, "source": {"snapshot": "false"}}]
    cut.changes([change_of(ORDERS, 0, offset, value) for offset, value in enumerate(values)]
                + [change_of(LINES, 1, 7, {"op": "c", "after": {"id": 9}, "source": {}})])
    after = cut.advance(now=0)
    assert after.offsets == {(ORDERS, 0): 1, (LINES, 1): 7}
    assert (after.end_offset, after.transaction, after.committed_ms) == (-1, None, None)
    assert cut.waiting_transactions == 0 and cut.waiting_changes == 0


def test_what_the_cut_keeps_of_a_value_reads_as_the_whole_value_does():
    """The pool keeps only cut_fields of each decoded value for its cut; change_of and boundary_of read
    the same from it as from the whole value, for Debezium's changes and transaction events."""
    from testkit import debezium as dbz

    block = dbz.source("pg", "db", "public", "orders", 1000, lsn=77)
    streamed = dbz.event("u", {"id": 1, "note": "x" * 1000}, {"id": 1, "note": None}, block, 1001,
                         transaction=dbz.transaction_block(dbz.transaction_id(571, 77), 2, 1))
    snapshot_last = dbz.event("r", {"id": 2}, None, dbz.source("pg", "db", "public", "orders", 999, snapshot="last"), 999)
    plain = dbz.event("c", {"id": 3}, None, block, 1002)
    for value in (streamed, snapshot_last, plain, None):
        assert change_of(ORDERS, 0, 5, cut_fields(value)) == change_of(ORDERS, 0, 5, value)
    assert "after" not in cut_fields(streamed) and "before" not in cut_fields(streamed)
    for event in (dbz.transaction_event("BEGIN", dbz.transaction_id(571, 70), 1000),
                  dbz.transaction_event("END", dbz.transaction_id(571, 90), 1003, {"public.orders": 2})):
        assert boundary_of(3, cut_fields(event)) == boundary_of(3, event)


# --- changes Debezium sends again (at least once) of transactions already behind the cut -------------------

def _two_transactions_behind_the_cut(**options) -> CutState:
    """Transactions 1 (an order and a line) and 2 (a line) taken whole: the cut is after 2's END."""
    cut = state(**options)
    cut.changes([Change(ORDERS, 0, 0, "1", 1), Change(LINES, 0, 0, "1", 1), Change(LINES, 0, 1, "2", 1)])
    cut.boundaries([end(0, "1", {"public.orders": 1, "public.lines": 1}), end(1, "2", {"public.lines": 1})], now=0)
    assert cut.advance(now=0).end_offset == 1
    return cut


def test_a_change_sent_again_after_its_transaction_is_behind_the_cut_does_not_hold_its_partition():
    cut = _two_transactions_behind_the_cut()
    # A Connect worker killed before its offsets flushed: transaction 1's line again, with no END (its END
    # is behind the cut), then transaction 3.
    cut.changes([Change(LINES, 0, 2, "1", 1), Change(LINES, 0, 3, "3", 1)])
    cut.boundaries([end(2, "3", {"public.lines": 1})], now=1)
    after = cut.advance(now=1)
    assert (after.end_offset, after.offsets[(LINES, 0)], after.expired) == (2, 3, 0)
    assert cut.waiting_changes == 0 and cut.replayed == 1


def test_a_change_sent_again_after_a_restart_from_the_cut_row_does_not_hold_its_partition():
    """A restart rebuilds the cut from its row; the transactions the cut passed lately are given to it
    again (the pool's ENDs at or before the cut), so a change sent again of one of them is known."""
    before = _two_transactions_behind_the_cut()
    cut = state(cut=Cut.from_dict(json.loads(json.dumps(before.cut.to_dict()))))
    cut.passed([end(0, "1", {"public.orders": 1, "public.lines": 1}), end(1, "2", {"public.lines": 1})])
    cut.changes([Change(ORDERS, 0, 1, "1", 1), Change(ORDERS, 0, 2, "3", 1)])
    cut.boundaries([end(2, "3", {"public.orders": 1})], now=0)
    after = cut.advance(now=0)
    assert (after.end_offset, after.offsets[(ORDERS, 0)], after.expired) == (2, 2, 0)
    assert cut.waiting_changes == 0


def test_a_transaction_sent_again_in_part_with_its_end_does_not_hold_later_transactions():
    """A worker killed in the middle of a transaction's offsets: Debezium sends the rest of its changes and its
    END again. The END is of a transaction behind the cut: it does not wait for the changes not sent again."""
    cut = _two_transactions_behind_the_cut()
    cut.changes([Change(LINES, 0, 2, "1", 1), Change(LINES, 0, 3, "3", 1)])
    cut.boundaries([end(2, "1", {"public.orders": 1, "public.lines": 1}), end(3, "3", {"public.lines": 1})], now=1)
    after = cut.advance(now=1)
    assert (after.end_offset, after.transaction, after.offsets[(LINES, 0)], after.expired) == (3, "3", 3, 0)
    assert cut.waiting_transactions == 0 and cut.waiting_changes == 0


def test_an_end_sent_twice_while_its_transaction_waits_counts_once():
    cut = state()
    cut.changes([Change(ORDERS, 0, 0, "1", 1)])
    cut.boundaries([end(0, "1", {"public.orders": 1, "public.lines": 1})], now=0)
    cut.changes([Change(LINES, 0, 0, "1", 1), Change(LINES, 0, 1, "1", 1)])  # the line, then sent again
    cut.boundaries([end(1, "1", {"public.orders": 1, "public.lines": 1})], now=0)
    after = cut.advance(now=0)
    assert (after.end_offset, after.offsets) == (0, {(ORDERS, 0): 0, (LINES, 0): 1})
    assert cut.waiting_transactions == 0


def test_a_change_whose_end_never_comes_is_given_up_on_after_the_bound_and_counted():
    """A change sent again of a transaction the cut passed longer ago than it remembers (or an END lost):
    no END will close it. It holds its partition for the bound, then shows, counted as expired."""
    cut = state(expire_after_s=60, remembered=1)
    cut.changes([Change(LINES, 0, 0, "1", 1), Change(LINES, 0, 1, "2", 1)])
    cut.boundaries([end(0, "1", {"public.lines": 1}), end(1, "2", {"public.lines": 1})], now=0)
    assert cut.advance(now=0).offsets == {(LINES, 0): 1}
    cut.changes([Change(LINES, 0, 2, "1", 1)])  # 1 is forgotten (only 2 is remembered)
    assert cut.advance(now=10).offsets == {(LINES, 0): 1}
    assert not cut.expiry_due(now=69) and cut.expiry_due(now=70)
    after = cut.advance(now=70)
    assert (after.offsets, after.expired, after.end_offset) == ({(LINES, 0): 2}, 1, 1)
    assert cut.waiting_changes == 0 and not cut.expiry_due(now=1000)
