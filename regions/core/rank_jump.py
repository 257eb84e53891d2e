"""A jump to a rank of a sharded board in two rounds as a rule: sample, then read the page (pure).

The entry at the 0-based rank ``T`` of a board of ``S`` shards has ``b[s]`` entries of each shard
ranked before it, ``sum(b) == T``. Players are spread over shards by a hash of their id, whatever
their score, so ``b[s]`` is close to ``T / S``: a hypergeometric count, whose deviation is at most
``sqrt(T / S * (1 - 1 / S))``. A sampling round reads, in one call per shard, the entries at evenly
spaced indices of that shard around its share of the page. Every sampled entry is a position whose
count of entries ranked before it is exact in its own shard and, in every other shard, bracketed by
that shard's samples on either side of it. From those brackets:

- the start: the sampled position surely ranked at or before ``T`` with the greatest lower bound
  (none: the board's first entry);
- the end: the sampled position surely ranked at or after ``T + size`` with the least upper bound
  (none: the board's end);
- each shard's window: from the start, its upper bound at the end less its lower bound at the
  start entries. Those windows hold every entry between the start and the end, so the merge of
  them, less the entries between the start and ``T`` (the windows' own counts give that exactly),
  is the page.

When a window would be wider than the budget, another round samples inside each shard's bracket
(each round narrows it by the number of samples). The page read is checked (:meth:`RankJump.page`):
on a board that moved between the rounds a window may fall short, which the check sees, and the
caller then searches by position (:class:`regions.core.paging.RankSearch`).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from regions.core.paging import Page, Position, covered, forward_page, merge_rows
from regions.core.reads import Row, Window, row_order

Key = tuple[float, str]


@dataclass(frozen=True, slots=True)
class PagePlan:
    """The page read: from ``start`` (None: each shard's first entry), ``counts[s]`` entries of shard s."""

    start: Position | None
    counts: list[int]


class RankJump:
    """The sampling rounds and the page read of a jump to the 0-based rank ``target`` of a board of
    ``shards`` shards, for a page of ``size``. Each round: :meth:`samples` gives the indices to read
    in each shard, :meth:`sampled` takes the entries read; then :meth:`plan` and :meth:`page`."""

    SAMPLES = 128  # the most indices read from one shard in a round
    ROUNDS = 4  # sampling rounds before the jump gives up (a board that moves under it)
    DEVIATIONS = 3.5  # how far around its share a shard is first sampled, in deviations

    def __init__(self, target: int, shards: int, size: int) -> None:
        self.target, self.size, self.shards = target, size, shards
        self.budget = max(2 * size, 128)  # entries a window of the page read may take from one shard
        self._spacing = max(1, self.budget // 6)  # between samples: the windows' slack is ~3 of them
        self._sizes: list[int] | None = None
        self._samples: list[list[tuple[Key, int, Row]]] = [[] for _ in range(shards)]  # in Redis order
        self._keys: list[list[Key]] = [[] for _ in range(shards)]
        self._round = 0
        self._found: tuple[Key | None, Key | None] | None = None  # the bounds, until the next samples

    @property
    def total(self) -> int | None:
        """The board's size, once a round has read it."""
        return None if self._sizes is None else sum(self._sizes)

    def samples(self) -> list[tuple[int, list[int]]] | None:
        """This round's (shard, ascending indices), or None when the page can be planned (or the
        jump gives up: then :meth:`plan` is None)."""
        if self.target + self.size <= self.budget or self._round >= self.ROUNDS:
            return None
        if self._sizes is None:
            return self._first_round()
        if self.target >= sum(self._sizes) or self._widest() <= self.budget:
            return None
        self._round += 1
        ranges = self._ranges()
        return [(s, self._spread(lo, hi, self._sizes[s])) for s, (lo, hi) in enumerate(ranges) if hi > lo]

    def _ranges(self) -> list[tuple[int, int]]:
        """Where the page's entries are in each shard: between its bounds at the start and the end,
        and, since the shards' counts before the page's first (after its last) entry sum to the
        target (the target plus the size), within what the other shards' bounds leave."""
        start, end = self._bounds()
        lo, hi = self._lower(start), self._upper(end)
        under, over = sum(lo), sum(hi)
        after = self.target + self.size
        return [
            (max(lo[s], self.target - (over - hi[s])), min(hi[s], after - (under - lo[s])))
            for s in range(self.shards)
        ]

    def _first_round(self) -> list[tuple[int, list[int]]]:
        self._round += 1
        share, s = self.target / self.shards, self.shards
        reach = math.ceil(self.DEVIATIONS * math.sqrt(share * (1 - 1 / s))) + 1
        lo, hi = max(0, int(share) - reach), int((self.target + self.size) / s) + reach
        return [(shard, self._spread(lo, hi, None)) for shard in range(s)]

    def _spread(self, lo: int, hi: int, size: int | None) -> list[int]:
        """Evenly spaced indices from ``lo`` through ``hi`` (within a shard of ``size``, if known)."""
        if size is not None:
            hi = min(hi, size - 1)
        count = min(self.SAMPLES, (hi - lo) // self._spacing + 2)
        if hi <= lo or count < 2:
            return [max(0, lo)]
        return sorted({lo + (hi - lo) * i // (count - 1) for i in range(count)})

    def sampled(self, asked: Sequence[tuple[int, list[int]]], windows: Sequence[Window]) -> None:
        """The entries an ``at`` read found at the indices asked (a shard's entries stop at its end),
        each window's ``count`` the shard's size."""
        sizes = self._sizes or [0] * self.shards
        for (s, indices), window in zip(asked, windows, strict=True):
            sizes[s] = window.count
            found = [(row_order(row), i, row) for i, row in zip(indices, window.rows, strict=False)]
            self._samples[s] = sorted(self._samples[s] + found, key=lambda sample: sample[0])
            self._keys[s] = [k for k, _, _ in self._samples[s]]
        self._sizes = sizes
        self._found = None

    def _count(self, s: int, key: Key | None, upper: bool) -> int:
        """A bound on shard s's entries ranked before the position ``key`` (None: the first entry
        when lower, the board's end when upper)."""
        size = (self._sizes or [0] * self.shards)[s]
        if key is None:
            return size if upper else 0
        samples = self._samples[s]
        at = bisect.bisect_left(self._keys[s], key)
        if at < len(samples) and samples[at][0] == key:
            return samples[at][1]  # the position is this shard's own sample: exact
        if upper:
            return samples[at][1] if at < len(samples) else size
        return samples[at - 1][1] + 1 if at > 0 else 0

    def _lower(self, key: Key | None) -> list[int]:
        return [self._count(s, key, False) for s in range(self.shards)]

    def _upper(self, key: Key | None) -> list[int]:
        return [self._count(s, key, True) for s in range(self.shards)]

    def _bounds(self) -> tuple[Key | None, Key | None]:
        """The start and the end (module note), found by bisection: both bounds grow with the position."""
        if self._found is None:
            keys = sorted(itertools.chain(*self._keys))
            surely_before = _last(keys, lambda k: sum(self._upper(k)) <= self.target)
            surely_after = _last(keys, lambda k: sum(self._lower(k)) < self.target + self.size) + 1
            start = keys[surely_before] if surely_before >= 0 else None
            self._found = start, keys[surely_after] if surely_after < len(keys) else None
        return self._found

    def _widest(self) -> int:
        start, end = self._bounds()
        return max(h - lo for h, lo in zip(self._upper(end), self._lower(start), strict=True))

    def plan(self) -> PagePlan | None:
        """The page read once sampling is over; None when the windows would still be too wide."""
        if self.target + self.size <= self.budget:
            return PagePlan(None, [self.target + self.size] * self.shards)
        start, end = self._bounds()
        counts = [max(1, h - lo) for h, lo in zip(self._upper(end), self._lower(start), strict=True)]
        if max(counts) > self.budget:
            return None
        return PagePlan(None if start is None else self._position(start), counts)

    def _position(self, key: Key) -> Position:
        for keys, samples in zip(self._keys, self._samples, strict=True):
            at = bisect.bisect_left(keys, key)
            if at < len(keys) and keys[at] == key:
                row = samples[at][2]
                return Position(row[1], row[0])
        raise ValueError(f"no sample at {key}")  # the start is always one of the samples

    def page(self, plan: PagePlan, windows: Sequence[Window]) -> Page | None:
        """The page from the plan's windows, or None when they cannot be shown to hold it (the
        board moved between the rounds): a full window ending before the page's last entry may
        have more entries inside it."""
        skip = self.target - sum(w.first for w in windows)
        if skip < 0:
            return None
        merged = list(itertools.islice(merge_rows(windows), skip + self.size))
        if not covered(windows, plan.counts, merged, skip + self.size, True):
            return None
        lead = None if plan.start is None else float(plan.start.score)
        return forward_page(windows, self.size, skip, lead, merged)


def _last(keys: Sequence[Key], holds: Callable[[Key], bool]) -> int:
    """The last index of ``keys`` where ``holds`` (true for a prefix), or -1."""
    lo, hi = 0, len(keys)
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(keys[mid]):
            lo = mid + 1
        else:
            hi = mid
    return lo - 1
