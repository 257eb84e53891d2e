"""Approximate (trending) boards: how an award counts, and the candidate list.

Pure: no I/O, no clock. A SUM board whose members may be millions of distinct items keeps, per
board (per period on a board with periods) and per partition, a Count-Min Sketch
(``regions.core.sketch``) and a list of the best candidates by estimate. Each item lives in one
partition (awards are keyed ``board|item``), so its estimate comes from its own partition's sketch:
its error is at most epsilon x the partition's total, which is at most epsilon x the board's.

Invariants kept here (and property-tested):
- an award is deduplicated by event id exactly like any award; of several copies of one event id
  the earliest (acceptance time, region, digest) counts, in every region whatever the arrival
  order: a copy that wins adds the difference of the amounts (``Counted.amount``), so the sketch's
  counters are the sum of the winners' amounts, the same everywhere;
- a list holds at most ``capacity`` = 2k candidates. An item is only reconsidered when an award
  names it, so the list depends on arrival order; keeping twice the k that are read leaves room
  for heavy items to stay listed while the threshold rises, so the k best of the list are, with
  high probability, the k best estimates whatever the order;
- ``version`` grows by one each time the list changes: every candidate the projection shows carries
  the version of the list it was written with, so the projection's newer-version rule applies.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from regions.core.aggregation import (
    Conflict,
    DedupeMemory,
    Duplicate,
    Forgotten,
    Seen,
    copy_of,
    copy_order,
    repeat_of,
)
from schema.records import AwardEvent


@dataclass(frozen=True, slots=True)
class Counted:
    """The award counts: ``amount`` is added to its item's counters (a winning copy: the difference
    from the copy counted before); ``seen`` is the copy to remember; ``refused`` the copy counted
    before when its payload differs (it goes to reconciliation)."""

    amount: int
    seen: Seen
    refused: Seen | None = None
    replaced: bool = False


def count_award(
    seen: Seen | None, award: AwardEvent, memory: DedupeMemory, *, same_state: bool = True
) -> Counted | Duplicate | Conflict | Forgotten:
    """How ``award`` counts, given the remembered copy of its event id. As with exact boards
    (``regions.core.aggregation.apply_award``), without ``same_state`` (a board with periods) only an
    identical copy may replace the remembered one."""
    repeat = repeat_of(award.event_id, award.digest, award.accepted_at_ms, seen, memory)
    if repeat is None:
        return Counted(award.amount, copy_of(award))
    if seen is None or isinstance(repeat, Forgotten):
        return repeat
    copy = copy_of(award)
    conflict = copy.digest != seen.digest
    if (conflict and not same_state) or copy_order(copy) >= copy_order(seen) or seen.amount is None:
        return repeat
    return Counted(award.amount - seen.amount, copy, seen if conflict else None, replaced=True)


Candidate = tuple[str, int]  # (item, estimate)


@dataclass(frozen=True, slots=True)
class CandidateList:
    """A partition's candidates of one board: ``total`` is the partition's counted total."""

    version: int = 0
    total: int = 0
    items: tuple[Candidate, ...] = ()  # best first: estimate descending, then item


def ranked(items: dict[str, int], capacity: int) -> tuple[Candidate, ...]:
    """The ``capacity`` best, best first (estimate descending, then item ascending)."""
    return tuple(heapq.nsmallest(capacity, items.items(), key=lambda c: (-c[1], c[0])))


class _Worse(str):
    """An item id that sorts in reverse: of equal estimates, the larger id ranks worse."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)

    def __le__(self, other: str) -> bool:
        return str.__ge__(self, other)

    def __gt__(self, other: str) -> bool:
        return str.__lt__(self, other)

    def __ge__(self, other: str) -> bool:
        return str.__le__(self, other)


@dataclass(slots=True, eq=False)
class Candidates:
    """A candidate list being changed: items by estimate, with a lazy min-heap of the worst first
    (least estimate, then largest item id: the reverse of the ranking)."""

    capacity: int
    items: dict[str, int] = field(default_factory=dict)
    _heap: list[tuple[int, _Worse]] = field(default_factory=list)

    @classmethod
    def of(cls, listed: CandidateList, capacity: int) -> Candidates:
        found = cls(capacity, dict(listed.items))
        found._restart()
        return found

    def _restart(self) -> None:
        self._heap = [(e, _Worse(i)) for i, e in self.items.items()]
        heapq.heapify(self._heap)

    def offer(self, item: str, estimate: int) -> None:
        """``item`` now has ``estimate``: it stays, joins, or joins in place of the worst."""
        if item not in self.items and len(self.items) >= self.capacity:
            worst = self._worst()
            if (estimate, _Worse(item)) <= worst:
                return
            del self.items[worst[1]]
        self.items[item] = estimate
        heapq.heappush(self._heap, (estimate, _Worse(item)))
        if len(self._heap) > 4 * self.capacity + 16:  # mostly stale entries: start the heap anew
            self._restart()

    def _worst(self) -> tuple[int, _Worse]:
        while True:
            estimate, item = self._heap[0]
            if self.items.get(item) == estimate:
                return estimate, item
            heapq.heappop(self._heap)


def changes(before: CandidateList, after: tuple[Candidate, ...]) -> tuple[list[Candidate], list[str]]:
    """(candidates new or with another estimate, items no longer listed) from ``before`` to ``after``."""
    old = dict(before.items)
    changed = [(item, estimate) for item, estimate in after if old.get(item) != estimate]
    listed = {item for item, _ in after}
    return changed, sorted(item for item in old if item not in listed)
