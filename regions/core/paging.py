"""Keyset pages of a ranking: the request's rules, the opaque cursors, and the merge of each shard's
page into the board's (pure).

A cursor names a position of the board's sorted set, (score, member) as Redis orders them (the
member carries the tie key and the user id), with the id of the board it was read from (a period's
board id names its period): a page after (before) it holds the entries ranked after (before) that
position, whoever holds it now. So a walk of a board whose players do not move returns each player
once, in rank order, with contiguous ranks; a player who moves between two pages is seen twice or
not at all, never twice in one page (each page is one read of every shard).

A sharded board's page is the merge of every shard's page at the same position: each shard gives
its next ``size`` entries after (before) the position, and the count of its entries ranked before
it, whose sum is the rank of the page. A jump to a rank of a sharded board is a search by position
(:class:`RankSearch`), never a walk.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import heapq
import itertools
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from regions.core.boards import Board
from regions.core.reads import RankedEntry, Row, Window, entries_of, row_order

_SCORE = re.compile(r"-?[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?")  # how Redis writes a finite score
_VERSION = 1


class PagingError(Exception):
    """A page request that breaks a rule; ``argument`` names the argument, the message the rule.
    ``limit``: the argument is over the read limit (LIMIT_EXCEEDED rather than bad input)."""

    def __init__(self, argument: str, message: str, *, limit: bool = False) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Position:
    """A position of a board's sorted set: a raw Redis score and member."""

    score: str
    member: str


def encode_cursor(board_id: str, row: Row) -> str:
    """The opaque cursor of a page's row, bound to the board (and period) it was read from."""
    raw = json.dumps([_VERSION, board_id, row[1], row[0]], ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(board_id: str, cursor: str, argument: str) -> Position:
    """The position of a cursor read from ``board_id``; PagingError naming ``argument`` for a cursor
    that does not decode or was read from another board or period."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        version, board, score, member = json.loads(raw.decode())
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise PagingError(argument, "not a cursor of this API (pass a startCursor or endCursor)") from None
    if version != _VERSION or not all(isinstance(v, str) for v in (board, score, member)):
        raise PagingError(argument, "not a cursor of this API (pass a startCursor or endCursor)")
    if board != board_id:
        raise PagingError(argument, f"the cursor was read from {board!r}, not from {board_id!r}")
    if not _SCORE.fullmatch(score) or not member:
        raise PagingError(argument, "not a cursor of this API (pass a startCursor or endCursor)")
    return Position(score, member)


@dataclass(frozen=True, slots=True)
class PageRequest:
    """A valid page request: ``size`` entries forwards (after ``cursor``, from the 0-based rank
    ``start``, or from the first) or backwards (before ``cursor``, or the board's last)."""

    size: int
    forward: bool
    cursor: Position | None = None
    start: int = 0


def page_request(
    board_id: str,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    from_rank: int | None,
    cap: int,
) -> PageRequest:
    """The request the arguments make, or PagingError naming the argument and the rule; a page size
    is 1..``cap`` (``min(100, cap)`` when neither ``first`` nor ``last`` is given)."""
    _together("first", first, "last", last)
    _together("after", after, "before", before)
    _together("fromRank", from_rank, "after", after)
    _together("fromRank", from_rank, "before", before)
    _together("last", last, "after", after)
    _together("first", first, "before", before)
    _together("fromRank", from_rank, "last", last)
    for name, value in (("first", first), ("last", last), ("fromRank", from_rank)):
        if value is not None and value < 1:
            raise PagingError(name, f"must be 1 or more, got {value}")
    for name, value in (("first", first), ("last", last)):
        if value is not None and value > cap:
            raise PagingError(name, f"must be between 1 and {cap}, got {value}", limit=True)
    size = first or last or min(100, cap)
    if last is not None or before is not None:
        return PageRequest(size, False, None if before is None else decode_cursor(board_id, before, "before"))
    if after is not None:
        return PageRequest(size, True, decode_cursor(board_id, after, "after"))
    return PageRequest(size, True, start=(from_rank or 1) - 1)


def _together(name: str, value: object, other: str, other_value: object) -> None:
    if value is not None and other_value is not None:
        raise PagingError(name, f"cannot be given with {other}")


@dataclass(frozen=True, slots=True)
class Page:
    """A page: its rows in rank order from the 0-based rank ``first``, the board's size, whether
    entries are ranked before and after it, and ``above``: the entries with a strictly better score
    than its first row (what its shared ranks start from)."""

    first: int
    rows: list[Row]
    total: int
    has_previous: bool
    has_next: bool
    above: int = 0


EMPTY_PAGE = Page(0, [], 0, False, False)


def page_entries(board: Board, page: Page) -> list[RankedEntry]:
    """A page's rows as ranked entries."""
    return entries_of(board, Window(-1, page.first, page.total, page.rows, page.above))


def _score(row: Row) -> float:
    return float(row[1])


def _above(windows: Sequence[Window], rows: list[Row], lead: float | None) -> int:
    """The shards' entries with a strictly better score than the page's first row. A shard's
    ``above`` counts them against ``lead`` (the position a forward read starts at: every entry
    before the shard's window is at or before it) or, without one, against its own first row
    (before which every entry of the shard is at or before it); anything the shard has before its
    window is otherwise strictly better, as are its rows of a strictly better score."""
    if not rows:
        return 0
    score = float(rows[0][1])
    total = 0
    for w in windows:
        own = lead if lead is not None else (float(w.rows[0][1]) if w.rows else None)
        total += (w.above if own == score else w.first) + bisect.bisect_left(w.rows, score, key=_score)
    return total


def forward_page(
    windows: Sequence[Window], size: int, skip: int = 0, lead: float | None = None, merged: list[Row] | None = None
) -> Page:
    """The page of ``size`` from shards' forward reads at one position (each shard's ``first``:
    its entries ranked before its rows; ``lead``: the position's score, which the reads' ``above``
    counts from, or None for reads from each shard's start), ``skip`` merged rows left out first
    (``merged``: at least the first ``skip + size`` of the windows' rows in rank order, when the
    caller has them)."""
    if merged is None:
        merged = list(itertools.islice(merge_rows(windows), skip + size))
    rows = merged[skip : skip + size]
    first = sum(w.first for w in windows) + skip
    total = sum(w.count for w in windows)
    above = _above(windows, rows, lead)
    return Page(first, rows, total, min(first, total) > 0, first + len(rows) < total, above)


def share_of(size: int, shards: int) -> int:
    """The rows each of ``shards`` shards first gives a page of ``size``: its share and a margin.
    Players are spread over shards by a hash of their id, whatever their score, so how many of a
    page's rows one shard holds is a binomial count; 4.5 deviations over its mean, a page needs more
    from one shard about once in 100,000 reads (then :func:`covered` sees it)."""
    if shards <= 1:
        return size
    p = 1 / shards
    return min(size, math.ceil(size * p + 4.5 * math.sqrt(size * p * (1 - p))) + 1)


def covered(
    windows: Sequence[Window], asked: Sequence[int], merged: list[Row], size: int, forward: bool
) -> bool:
    """Whether the ``size`` rows taken from ``merged`` (the windows' rows in rank order: the first
    ``size`` of them forwards, the last ``size`` backwards) are the board's: no window that gave
    all the rows ``asked`` of it and has more entries beyond them (after its last row forwards,
    before its first backwards) stops inside those rows, where its next entries would belong."""
    gave_all = [w for w, n in zip(windows, asked, strict=True) if len(w.rows) >= n]
    if forward:
        cut = [w for w in gave_all if w.first + len(w.rows) < w.count]
        if not cut:
            return True
        return len(merged) >= size and all(row_order(w.rows[-1]) >= row_order(merged[size - 1]) for w in cut)
    cut = [w for w in gave_all if w.first > 0]
    if not cut:
        return True
    return len(merged) >= size and all(row_order(w.rows[0]) <= row_order(merged[-size]) for w in cut)


def merge_rows(windows: Sequence[Window]) -> Iterator[Row]:
    """The windows' rows in rank order, each window's in rank order (merged lazily: a page takes
    the first few of many)."""
    return heapq.merge(*(w.rows for w in windows), key=row_order)


def backward_page(windows: Sequence[Window], size: int, merged: list[Row] | None = None) -> Page:
    """The page of ``size`` from shards' backward reads at one position (each shard's ``rank``: its
    entries ranked before the position; its rows the nearest of them; ``merged``: all their rows in
    rank order, when the caller has them)."""
    if merged is None:
        merged = list(merge_rows(windows))
    rows = merged[max(0, len(merged) - size) :]
    before = sum(w.rank for w in windows)
    total = sum(w.count for w in windows)
    return Page(before - len(rows), rows, total, before > len(rows), before < total, _above(windows, rows, None))


class RankSearch:
    """Where the 0-based rank ``target`` of a sharded board begins in every shard, found by
    position in rounds (each one pipelined read of every shard), never by a walk.

    It keeps, per shard, bounds ``[lo, hi]`` on how many of the shard's entries rank before the
    target. Each round reads a pivot entry inside every shard's bounds (first where the target is
    expected if players spread evenly over shards, then at the middle, which halves at least one
    shard's bounds a round: O(shards x log N) rounds at worst), then counts in every other shard the
    entries ranked before each pivot. A pivot ranked at or before the target raises the lower bounds
    to the entries before it; any other lowers the upper bounds. The search ends when at most
    ``slack`` entries are left between the best lower pivot and the target: the page is then read
    from that pivot (or from the first) and ``gap`` merged entries left out."""

    INTERPOLATED = 3  # rounds that guess by proportion before bisecting

    def __init__(self, target: int, counts: Sequence[int], slack: int) -> None:
        self.target, self.total = target, sum(counts)
        self._lo, self._hi = [0] * len(counts), list(counts)
        self._slack, self._round = slack, 0
        # Bisection ends within this many rounds on a board that does not move; one that moves ends too.
        self._rounds = self.INTERPOLATED + len(counts) * (max(counts, default=0) + 1).bit_length() + 1
        self.lower: Position | None = None  # the best pivot ranked at or before the target

    @property
    def gap(self) -> int:
        """Entries between the lower pivot (or the first) and the target."""
        return max(0, self.target - sum(self._lo))

    def searching(self) -> bool:
        """Whether the position is still to be narrowed down."""
        width = sum(h - lo for lo, h in zip(self._lo, self._hi, strict=True))
        return self.gap > self._slack and width > 0 and self.target < self.total and self._round < self._rounds

    def pivots(self) -> list[tuple[int, int]] | None:
        """(shard, index) of this round's pivots, or None when the search is over."""
        if not self.searching():
            return None
        width = sum(h - lo for lo, h in zip(self._lo, self._hi, strict=True))
        guess = self._round < self.INTERPOLATED
        self._round += 1
        found = []
        for s, (lo, hi) in enumerate(zip(self._lo, self._hi, strict=True)):
            if hi > lo:
                step = self.gap * (hi - lo) // width if guess else (hi - lo) // 2
                found.append((s, lo + min(hi - lo - 1, step)))
        return found

    def counted(self, pivot: Row, before: Sequence[int]) -> None:
        """A pivot with ``before[s]``: the entries of each shard ranked before it (in its own
        shard: its index)."""
        at = sum(before)
        if at <= self.target:
            if self.lower is None or at > sum(self._lo):
                self._lo, self.lower = list(before), Position(pivot[1], pivot[0])
        else:
            self._hi = [min(h, b) for h, b in zip(self._hi, before, strict=True)]
        self._hi = [max(h, lo) for h, lo in zip(self._hi, self._lo, strict=True)]  # a board that moved


def past_the_end(start: int, total: int) -> Page:
    """The empty page from the 0-based rank ``start`` at or after the end of a board of ``total``."""
    return Page(start, [], total, total > 0, False)
