"""Approximate (trending) boards: how an award counts, and the candidate list with its exact counts.

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

Exact counts of the candidates (the finalists' verification), bounded by the list's size:
- while an item is listed the list keeps its exact count: the sum of the amounts counted for it
  since it joined (a winning copy adds its difference, like the sketch). With C the item's true
  count here (the sum of its winning copies' amounts) and B what had been counted for it when it
  joined, C = exact + B at all times;
- the count is **verified** (C = exact) when B = 0 is proven at the moment it joins, by either of:
  the list never dropped an item (``lossless``: it never refused one, pushed one out, lost one to
  an erasure or counted an award it did not offer), so an item it does not hold was never counted;
  or the sketch's estimate before the joining award was 0 (amounts are never negative, so an
  estimate is never below the true count: B <= 0). An item that leaves loses its exact count, and
  whether it was verified; if it comes back, only the sketch can vouch for it;
- a verified count is the item's true count, the same in every region that read the same awards.
  Which items are verified depends on arrival order only once a list has dropped an item: with at
  most ``capacity`` distinct items in a partition (and no erasure), every region verifies every
  candidate, whatever the order.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable
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
Exact = tuple[int, bool]  # (what was counted for the item since it joined the list, verified: all it has)
UNKNOWN: Exact = (0, False)
"""The exact count of a candidate listed before exact counts were kept: never verified."""


@dataclass(frozen=True, slots=True)
class CandidateList:
    """A partition's candidates of one board: ``total`` is the partition's counted total; ``exact``
    the exact count of each of ``items``, in the same order (empty in a list written before exact
    counts were kept); ``lossless``: the list never dropped an item (see the module's docstring)."""

    version: int = 0
    total: int = 0
    items: tuple[Candidate, ...] = ()  # best first: estimate descending, then item
    exact: tuple[Exact, ...] = ()
    lossless: bool = True

    def exact_of(self) -> dict[str, Exact]:
        """Each listed item's exact count (``UNKNOWN`` for those of a list without exact counts)."""
        if not self.exact:
            return dict.fromkeys((item for item, _ in self.items), UNKNOWN)
        return {item: exact for (item, _), exact in zip(self.items, self.exact, strict=True)}

    def shown(self) -> dict[str, tuple[int, int | None]]:
        """What the projection shows of each listed item: its estimate, and its exact count when
        verified (None: not verified)."""
        exact = self.exact_of()
        return {item: (estimate, verified_count(exact[item])) for item, estimate in self.items}


def verified_count(exact: Exact) -> int | None:
    """The item's true count when its exact count is verified; None when it is not."""
    count, verified = exact
    return count if verified else None


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
    (least estimate, then largest item id: the reverse of the ranking), and their exact counts."""

    capacity: int
    items: dict[str, int] = field(default_factory=dict)
    exact: dict[str, Exact] = field(default_factory=dict)
    lossless: bool = True
    _heap: list[tuple[int, _Worse]] = field(default_factory=list)

    @classmethod
    def of(cls, listed: CandidateList, capacity: int) -> Candidates:
        found = cls(capacity, dict(listed.items), listed.exact_of(), listed.lossless)
        found._restart()
        return found

    def _restart(self) -> None:
        self._heap = [(e, _Worse(i)) for i, e in self.items.items()]
        heapq.heapify(self._heap)

    def offer(self, item: str, estimate: int, amount: int) -> None:
        """``amount`` more was counted for ``item``, which now has ``estimate``: it stays (its exact
        count grows by ``amount``), joins, or joins in place of the worst. A joining item's count is
        verified when it cannot have been counted before: the list never dropped an item, or its
        estimate before this award (``estimate - amount``) was 0."""
        if item in self.items:
            count, verified = self.exact.get(item, UNKNOWN)
            self.exact[item] = (count + amount, verified)
        else:
            verified = self.lossless or estimate == amount
            if len(self.items) >= self.capacity:
                self.lossless = False  # an item is dropped: refused, or pushed out
                worst = self._worst()
                if (estimate, _Worse(item)) <= worst:
                    return
                self._drop(worst[1])
            self.exact[item] = (amount, verified)
        self.items[item] = estimate
        heapq.heappush(self._heap, (estimate, _Worse(item)))
        if len(self._heap) > 4 * self.capacity + 16:  # mostly stale entries: start the heap anew
            self._restart()

    def remove(self, item: str) -> bool:
        """``item`` leaves the list (an erasure), with its exact count; False when it was not listed."""
        if item not in self.items:
            return False
        self._drop(item)
        self.lossless = False  # its counters stay: were it counted again, they would not be its first
        return True

    def count_unlisted(self) -> None:
        """An award was counted for an item that is not offered (an erased player's): the list can no
        longer tell that an item it does not hold was never counted."""
        self.lossless = False

    def _drop(self, item: str) -> None:
        del self.items[item]
        self.exact.pop(item, None)

    def _worst(self) -> tuple[int, _Worse]:
        while True:
            estimate, item = self._heap[0]
            if self.items.get(item) == estimate:
                return estimate, item
            heapq.heappop(self._heap)

    def listed(self, version: int, total: int, estimate: Callable[[str], int] | None = None) -> CandidateList:
        """The list as it is now, best first, as ``version`` with the partition's ``total``; with
        ``estimate`` (the sketch's), every item's estimate read anew."""
        estimates = self.items if estimate is None else {item: estimate(item) for item in self.items}
        after = ranked(estimates, len(estimates))
        return CandidateList(
            version, total, after, tuple(self.exact[item] for item, _ in after), self.lossless
        )


def changes(before: CandidateList, after: CandidateList) -> tuple[list[str], list[str]]:
    """(items new or shown otherwise: another estimate or verified count, items no longer listed)
    from ``before`` to ``after``, each in ``after``'s (and item) order."""
    old, new = before.shown(), after.shown()
    changed = [item for item, shown in new.items() if old.get(item) != shown]
    return changed, sorted(item for item in old if item not in new)


def exact_note(count: int | None) -> str:
    """What the projection keeps beside a candidate, in the place where an exact board keeps the
    metadata of an award: its verified count as JSON text (``{"exact":12}``); empty: not verified."""
    return "" if count is None else f'{{"exact":{count}}}'


def noted_exact(note: str | None) -> int | None:
    """The verified count an ``exact_note`` holds; None for none (or any other text)."""
    if not note:
        return None
    try:
        count = json.loads(note).get("exact")
    except (ValueError, AttributeError):
        return None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


@dataclass(frozen=True, slots=True)
class Shown:
    """What a ranked entry shows besides its score: ``metadata``, the metadata of the award that
    holds the score (JSON text; empty: none), and ``exact_score``, the entry's exact count (None:
    not known; ``verified`` says it is)."""

    metadata: str
    exact_score: int | None

    @property
    def verified(self) -> bool:
        return self.exact_score is not None


def shown(score: int, metadata: str | None, *, estimated: bool, verified_count: int | None = None) -> Shown:
    """How an entry shows, live or archived. On an exact board (or result) the score is exact and
    the metadata the award's. On an approximate one the score is an estimate and no award's metadata
    is kept: the place where an exact board keeps it holds the candidate's verified count
    (``exact_note``, in the projection and in results archived before they kept the count apart),
    never shown as metadata; ``verified_count``, when given, is the count kept apart."""
    if not estimated:
        return Shown(metadata or "", score)
    return Shown("", verified_count if verified_count is not None else noted_exact(metadata))
