"""The erasure list as a change log, as pure rules. No I/O, no clock.

Every change of a player's erasure (asked, asked anew after a lift, lifted) is numbered per player
(``version``: 1, 2, ...; a row from before versions is 0) by the lightweight transaction that makes
it, and appended to the change log as ``(token, version, erased)``. The log has one **lane** per
region: only requests made in that region append to it, each taking the lane's next **sequence**
(0, 1, 2, ...) by a lightweight transaction that first saw the one before committed, so a lane has
no gaps. Sequences are kept in partitions of ``PAGE_SIZE`` (``page_of``).

A reader (an intake, an audit sink) holds ``ErasureListState``: per player the newest version it
took and whether it stands, and per lane the next sequence to read. Invariants kept:

- **Exact.** A player is on the list iff the newest version taken erases them: a change older than
  one taken changes nothing, so lanes read in any order (a lift asked in one region, the erasure it
  lifts in another) end in the same list.
- **Nothing skipped.** A lane is taken in sequence order from its cursor and stops at the first
  missing sequence (``advance``): a change not yet replicated to this region's data center, while a
  later one already is, is waited for, never stepped over. Clocks play no part.
- **Replays change nothing.** Taking a change again (read twice, appended twice after a crash) is a
  no-op.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

PAGE_SIZE = 10_000  # sequences per Cassandra partition of a lane


@dataclass(frozen=True, slots=True)
class ErasureChange:
    """A lane's entry ``sequence``: the player ``token`` is erased (or not) as of ``version``."""

    sequence: int
    token: str
    version: int
    erased: bool


def page_of(sequence: int) -> int:
    return sequence // PAGE_SIZE


def next_sequence(page: int, last: int | None) -> int | None:
    """The sequence to append after ``last``, the newest entry of partition ``page`` (None: the
    partition is empty; the writer reached it because the one before is full), or None when
    ``page`` is full and the next partition is to be looked at."""
    if last is None:
        return page * PAGE_SIZE
    if last + 1 >= (page + 1) * PAGE_SIZE:
        return None
    return last + 1


@dataclass(slots=True)
class ErasureListState:
    """What a reader knows: the players' newest versions, the erased ones, each lane's cursor."""

    versions: dict[str, int] = field(default_factory=dict)
    erased: set[str] = field(default_factory=set)
    cursors: dict[str, int] = field(default_factory=dict)  # lane -> next sequence to take

    def take(self, token: str, version: int, erased: bool) -> bool:
        """Take a player's state as of ``version``; False when a version as new was taken already."""
        known = self.versions.get(token)
        if known is not None and known >= version:
            return False
        self.versions[token] = version
        if erased:
            self.erased.add(token)
        else:
            self.erased.discard(token)
        return True

    def take_all(self, states: Iterable[tuple[str, int, bool]]) -> None:
        """Take ``(token, version, erased)`` of many players (the erasures table read whole)."""
        for token, version, erased in states:
            self.take(token, version, erased)

    def cursor(self, lane: str) -> int:
        return self.cursors.get(lane, 0)

    def advance(self, lane: str, changes: Sequence[ErasureChange]) -> int:
        """Take the lane's ``changes`` (read after its cursor, in sequence order) up to the first
        missing sequence; returns how many were taken. Entries before the cursor are skipped."""
        cursor, taken = self.cursor(lane), 0
        for change in changes:
            if change.sequence < cursor:
                continue
            if change.sequence > cursor:
                break  # a gap: that entry is not here yet
            self.take(change.token, change.version, change.erased)
            cursor, taken = cursor + 1, taken + 1
        self.cursors[lane] = cursor
        return taken
