"""One connector's consistent cut, advanced as a raw pool takes its changes and transaction events.

The pool's ingest hands every change of the connector's data topics and every event of its
transaction topic to CutState, in offset order per partition, before it commits them; advance()
then gives the cut that commit can carry (zync/transactions.py says what a cut is).

- An END closes its transaction when every data collection it counts whose topic the pool
  ingests has that many distinct changes of the transaction (`data_collection_order`: a change
  Debezium sent twice counts once). The cut moves over ENDs in the transaction topic's order
  (commit order) and stops at the first one not whole: a later transaction never shows before an
  earlier one.
- A partition of a data topic advances to the last offset before its first change whose
  transaction is not closed: changes of a partition are in commit order, so everything before
  that change belongs to closed transactions (or to none).
- The initial snapshot's changes carry no transaction: they are one pseudo-transaction, closed by
  the snapshot's last record (source.snapshot = last) or by the first streamed change.
- An END that stays not whole for `expire_after_s` (a change lost, a topic that fails to ingest) is
  given up on: the cut moves past it, the transaction is counted as expired, and its changes show
  as they come.
- Debezium sends at least once: after a Connect worker dies before its offsets flushed (or a connector
  restarts, a task moves) it sends again what followed its last flushed offset, at new offsets past the
  cut: changes, and the END (all of a transaction or, resumed in its middle, the rest of it). The cut
  remembers the last `remembered` transactions it passed (the pool gives a resumed cut those at or
  before it): a change of one of them is behind the cut as it comes, an END of one of them is skipped
  (it would wait for the changes not sent again). Exact for any replay of fewer transactions than that.
- A change whose transaction has no END read for `expire_after_s` after the change was taken (sent
  again of a transaction passed longer ago than remembered, or its END lost) is given up on too:
  its partition moves past it and it is counted as expired. A partition never waits for good.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from zync.transactions import END, SNAPSHOT, Boundary, Change, Cut

# Transactions the cut passed (whole or expired) that it remembers: a change or END of one of them sent again
# (Debezium sends at least once) or late is behind the cut. Replays resend what followed the connector's
# last flushed offsets (Kafka Connect flushes every offset.flush.interval.ms, 60 s by default): far fewer
# transactions than this at the rates one connector sees.
REMEMBERED = 100_000


class CutState:
    def __init__(self, prefix: str, ingested: Callable[[str], bool], cut: Cut | None = None,
                 expire_after_s: float = 600.0, remembered: int = REMEMBERED):
        """`prefix`: the connector's topic prefix; `ingested(topic)`: whether the pool takes a data topic."""
        self.prefix = prefix
        self.ingested = ingested
        self.cut = cut or Cut()
        self.expire_after_s = expire_after_s
        self.remembered = remembered
        self.replayed = 0  # changes and ENDs taken again of transactions already behind the cut (this process)
        self._ends: deque[tuple[Boundary, float]] = deque()  # ENDs past the cut, with when they were read
        self._ending: set[str] = set()  # the transactions of _ends
        self._seen: dict[str, dict[str, set[int]]] = {}  # open transaction -> topic -> data_collection_orders
        self._closed: set[str] = set()  # passed transactions whose changes may still be queued
        self._passed: dict[str, None] = {}  # the last `remembered` transactions the cut passed, oldest first
        # changes past the cut: (offset, transaction, when it was taken)
        self._queues: dict[tuple[str, int], deque[tuple[int, str | None, float | None]]] = {}
        self._snapshot_done = False

    # --- what the pool took -------------------------------------------------------

    def changes(self, changes: Iterable[Change], now: float | None = None) -> None:
        """`now`: when they were taken (None: at the next advance())."""
        for change in changes:
            key = (change.topic, change.partition)
            if change.offset <= self.cut.offsets.get(key, -1):
                continue  # read again (a resume reads from the cut): already behind it
            if change.transaction is not None and change.transaction != SNAPSHOT:
                self._snapshot_done = True
                if change.transaction in self._passed:
                    self.replayed += 1  # sent again: behind the cut already, nothing to wait for
                    self._closed.add(change.transaction)
                elif change.collection_order is not None:
                    self._seen.setdefault(change.transaction, {}).setdefault(change.topic, set()).add(
                        change.collection_order)
            elif change.snapshot_last:
                self._snapshot_done = True
            self._queues.setdefault(key, deque()).append((change.offset, change.transaction, now))

    def boundaries(self, boundaries: Iterable[Boundary], now: float) -> None:
        for boundary in boundaries:
            if boundary.status != END or boundary.offset <= self.cut.end_offset:
                continue
            if boundary.transaction in self._passed or boundary.transaction in self._ending:
                self.replayed += 1  # sent again: its changes may be sent again only in part, or not at all
                continue
            self._ends.append((boundary, now))
            self._ending.add(boundary.transaction)

    def passed(self, ends: Iterable[Boundary]) -> None:
        """ENDs at or before the cut (a resumed cut's latest, oldest first): transactions it passed."""
        for boundary in ends:
            if boundary.status == END and boundary.offset <= self.cut.end_offset:
                self._remember(boundary.transaction)

    def _remember(self, transaction: str) -> None:
        self._passed.pop(transaction, None)
        self._passed[transaction] = None
        while len(self._passed) > self.remembered:
            del self._passed[next(iter(self._passed))]

    # --- the cut ------------------------------------------------------------------

    def whole(self, end: Boundary) -> bool:
        seen = self._seen.get(end.transaction, {})
        for collection, count in end.counts.items():
            topic = f"{self.prefix}.{collection}"
            if self.ingested(topic) and len(seen.get(topic, ())) < count:
                return False
        return True

    def advance(self, now: float) -> Cut:
        """The cut after what was taken so far (self.cut, updated)."""
        end_offset, transaction, committed, expired = (self.cut.end_offset, self.cut.transaction,
                                                       self.cut.committed_ms, self.cut.expired)
        while self._ends:
            end, read_at = self._ends[0]
            if not self.whole(end):
                if now - read_at < self.expire_after_s:
                    break
                expired += 1
            self._ends.popleft()
            self._ending.discard(end.transaction)
            self._closed.add(end.transaction)
            self._remember(end.transaction)
            self._seen.pop(end.transaction, None)
            end_offset, transaction, committed = end.offset, end.transaction, end.ts_ms
        offsets = dict(self.cut.offsets)
        for key, queue in self._queues.items():
            while queue:
                offset, head, taken_at = queue[0]
                if taken_at is None:
                    queue[0] = (offset, head, now)
                    taken_at = now
                if not self._is_closed(head):
                    if not self._orphaned(head, taken_at, now):
                        break
                    expired += 1  # no END came for it within the bound: given up on, as an END never whole
                    self._seen.pop(head, None)
                    self._closed.add(head)
                    self._remember(head)
                offsets[key] = queue.popleft()[0]
        still_queued = {t for queue in self._queues.values() for _, t, _ in queue}
        self._closed = {t for t in self._closed if t in still_queued}
        self.cut = Cut(end_offset, transaction, committed, offsets, expired)
        return self.cut

    def _is_closed(self, transaction: str | None) -> bool:
        if transaction is None:
            return True
        if transaction == SNAPSHOT:
            return self._snapshot_done
        return transaction in self._closed or transaction in self._passed

    def _orphaned(self, transaction: str | None, taken_at: float | None, now: float) -> bool:
        """A queued change of a transaction without an END read, waiting out the bound since it was taken."""
        return (transaction is not None and transaction != SNAPSHOT and transaction not in self._ending
                and taken_at is not None and now - taken_at >= self.expire_after_s)

    def expiry_due(self, now: float) -> bool:
        """Whether the oldest END past the cut, or a partition's first change past it, has waited out the
        bound: the cut moves then even if nothing new arrives (a connector gone quiet behind a transaction a
        failing table holds)."""
        if self._ends and not self.whole(self._ends[0][0]) and now - self._ends[0][1] >= self.expire_after_s:
            return True
        return any(queue and not self._is_closed(queue[0][1]) and self._orphaned(queue[0][1], queue[0][2], now)
                   for queue in self._queues.values())

    # --- what waits -----------------------------------------------------------------

    @property
    def waiting_transactions(self) -> int:
        """ENDs read whose transactions are not behind the cut yet."""
        return len(self._ends)

    @property
    def waiting_changes(self) -> int:
        """Changes taken that are past the cut."""
        return sum(len(queue) for queue in self._queues.values())
