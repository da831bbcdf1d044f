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
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from zync.transactions import END, SNAPSHOT, Boundary, Change, Cut

EXPIRED_KEPT = 10_000  # expired transactions remembered, so that their late changes do not hold the cut


class CutState:
    def __init__(self, prefix: str, ingested: Callable[[str], bool], cut: Cut | None = None,
                 expire_after_s: float = 600.0):
        """`prefix`: the connector's topic prefix; `ingested(topic)`: whether the pool takes a data topic."""
        self.prefix = prefix
        self.ingested = ingested
        self.cut = cut or Cut()
        self.expire_after_s = expire_after_s
        self._ends: deque[tuple[Boundary, float]] = deque()  # ENDs past the cut, with when they were read
        self._seen: dict[str, dict[str, set[int]]] = {}  # open transaction -> topic -> data_collection_orders
        self._closed: set[str] = set()  # closed transactions whose changes may still be queued
        self._expired: dict[str, None] = {}  # the last EXPIRED_KEPT expired transactions, oldest first
        self._queues: dict[tuple[str, int], deque[tuple[int, str | None]]] = {}  # changes past the cut
        self._snapshot_done = False

    # --- what the pool took -------------------------------------------------------

    def changes(self, changes: Iterable[Change]) -> None:
        for change in changes:
            key = (change.topic, change.partition)
            if change.offset <= self.cut.offsets.get(key, -1):
                continue  # read again (a resume reads from the cut): already behind it
            if change.transaction is not None and change.transaction != SNAPSHOT:
                self._snapshot_done = True
                if change.collection_order is not None:
                    self._seen.setdefault(change.transaction, {}).setdefault(change.topic, set()).add(
                        change.collection_order)
            elif change.snapshot_last:
                self._snapshot_done = True
            self._queues.setdefault(key, deque()).append((change.offset, change.transaction))

    def boundaries(self, boundaries: Iterable[Boundary], now: float) -> None:
        for boundary in boundaries:
            if boundary.status == END and boundary.offset > self.cut.end_offset:
                self._ends.append((boundary, now))

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
                self._expired[end.transaction] = None
                if len(self._expired) > EXPIRED_KEPT:
                    oldest = next(iter(self._expired))
                    del self._expired[oldest]
                    self._closed.discard(oldest)
            self._ends.popleft()
            self._closed.add(end.transaction)
            self._seen.pop(end.transaction, None)
            end_offset, transaction, committed = end.offset, end.transaction, end.ts_ms
        offsets = dict(self.cut.offsets)
        for key, queue in self._queues.items():
            while queue and self._is_closed(queue[0][1]):
                offsets[key] = queue.popleft()[0]
        still_queued = {t for queue in self._queues.values() for _, t in queue}
        self._closed = {t for t in self._closed if t in still_queued or t in self._expired}
        self.cut = Cut(end_offset, transaction, committed, offsets, expired)
        return self.cut

    def _is_closed(self, transaction: str | None) -> bool:
        if transaction is None:
            return True
        if transaction == SNAPSHOT:
            return self._snapshot_done
        return transaction in self._closed

    def expiry_due(self, now: float) -> bool:
        """Whether the oldest END past the cut has waited out the bound: the cut moves then even if
        nothing new arrives (a connector gone quiet behind a transaction a failing table holds)."""
        return bool(self._ends) and not self.whole(self._ends[0][0]) and now - self._ends[0][1] >= self.expire_after_s

    # --- what waits -----------------------------------------------------------------

    @property
    def waiting_transactions(self) -> int:
        """ENDs read whose transactions are not behind the cut yet."""
        return len(self._ends)

    @property
    def waiting_changes(self) -> int:
        """Changes taken that are past the cut."""
        return sum(len(queue) for queue in self._queues.values())
