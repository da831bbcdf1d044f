"""One topic's ingest state: its tables, its schema tracker, its offsets and what waits for the next commit."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ingest.dead_letters import DeadLetter, DeadLetterTable
from ingest.decode import Message
from ingest.schemas import SchemaTracker
from ingest.table import RawTable
from zync.ingest_options import DEFAULT_TOLERANCE


@dataclass
class TopicState:
    topic: str
    table: RawTable
    dead_table: DeadLetterTable
    schemas: SchemaTracker
    tolerance: str = DEFAULT_TOLERANCE  # errors.tolerance: none (stop at a bad message) or all (dead-letter it)
    messages: list[Message] = field(default_factory=list)  # read, waiting for their commit
    dead: list[DeadLetter] = field(default_factory=list)  # dead letters waiting for the batch's commit
    first_at: float = 0.0  # when the first of them was read (--max-interval)
    next_offsets: dict[int, int] = field(default_factory=dict)  # committed: partition -> next offset
    read_offsets: dict[int, int] = field(default_factory=dict)  # read: partition -> next offset
    committed: int = 0
    # Dead letters past the raw table's resume point (a kill between the two commits): skipped when met again.
    known_dead: dict[int, set[int]] = field(default_factory=dict)
    dead_lettered: int = 0

    def resume(self) -> dict[int, int]:
        """Read where the tables stand: the next offset per partition (the raw table's, after the dead letters
        a kill left right at it), the column types and the writer schemas of the last rows.

        Dead letters are read whatever errors.tolerance says now: those a kill left past the resume
        point must be skipped even if this run stops at bad messages instead.
        """
        if not self.table.exists():
            self.known_dead = self.dead_table.open(self.topic, {})
            return self._past_known_dead()
        resume = self.table.resume(self.topic)
        self.known_dead = self.dead_table.open(self.topic, resume.offsets)
        self.schemas.resume(resume.key_type, resume.value_type, resume.key_schema_id, resume.value_schema_id)
        self.next_offsets = dict(resume.offsets)
        self.read_offsets = dict(resume.offsets)
        return self._past_known_dead()

    def _past_known_dead(self) -> dict[int, int]:
        """Start each partition after the dead letters right at its resume point (the usual case: the
        last messages of a partition were dead letters); others are skipped where they are met."""
        for p, offsets in self.known_dead.items():
            at = self.next_offsets.get(p, 0)
            while at in offsets:
                at += 1
            if at != self.next_offsets.get(p, 0):
                self.next_offsets[p] = self.read_offsets[p] = at
        return dict(self.next_offsets)

    @property
    def holding(self) -> bool:
        return bool(self.messages or self.dead)

    def hold(self, m: Message) -> None:
        """A message taken, to be committed with the next batch."""
        if not self.holding:
            self.first_at = time.monotonic()
        self.messages.append(m)
        self.read_offsets[m.partition] = m.offset + 1
        self.schemas.saw(m.key_schema_id, m.value_schema_id)

    def hold_dead(self, letter: DeadLetter) -> None:
        """A message for the dead-letter table; it commits with (before) the batch it was read in."""
        if not self.holding:
            self.first_at = time.monotonic()
        self.dead.append(letter)
        self.read_offsets[letter.message.partition] = letter.message.offset + 1

    def skip_known_dead(self, partition: int, offset: int) -> bool:
        """Whether the message was dead-lettered before a kill stopped the raw commit after it (taken already)."""
        if offset in self.known_dead.get(partition, ()):
            self.read_offsets[partition] = offset + 1
            return True
        return False

    def committed_to(self, partition: int, next_offset: int) -> None:
        self.next_offsets[partition] = max(self.next_offsets.get(partition, 0), next_offset)
        self.read_offsets[partition] = max(self.read_offsets.get(partition, 0), next_offset)
