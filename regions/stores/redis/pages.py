"""Keyset pages of a board in the Redis projection (the rules: :mod:`regions.core.paging`).

A page is one round of ``read_window`` calls, one per shard, at the same position: after or before
a cursor's (score, member), from a rank of one shard, from the first, or the last. Each shard of a
sharded board first gives only its share of the page with a margin (:func:`regions.core.paging.
share_of`), since a shard's rows cost Redis as much whether the page shows them or not; when the
merge cannot be shown whole from those (a shard gave all it was asked and could have more before
the page's end), the page is read again with every shard giving the whole page. A jump to a rank
of a sharded board first reads, in one call per shard, the entries at evenly spaced indices around
the shard's share of the rank, then the page from the sampled position the samples bound it by
(:class:`regions.core.rank_jump.RankJump`): two rounds as a rule, each call O(samples x log N) in
Redis, however deep the rank (one round when the rank is shallow). When the page read cannot be
shown whole (the board moved between the rounds), the position is searched by pivots instead
(:class:`regions.core.paging.RankSearch`: a pivot read by index, then the entries each other shard
ranks before it, in rounds, O(shards x log N) calls).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence

from regions.core.paging import (
    Page,
    PageRequest,
    RankSearch,
    backward_page,
    covered,
    forward_page,
    merge_rows,
    past_the_end,
    share_of,
)
from regions.core.rank_jump import RankJump
from regions.core.reads import Window

Form = tuple[str | int, ...]  # a read_window form and its arguments
Round = Callable[[Sequence[tuple[int, Form]]], Awaitable[list[Window]]]  # one call per (shard, form)

MAX_COUNT = 100_000  # read_window's bound on the entries of one call


async def read_page(read: Round, shards: int, request: PageRequest) -> Page:
    """The page ``request`` asks for, read with ``read`` from a board of ``shards`` shards."""
    if request.forward and request.cursor is None and request.start > 0 and shards > 1:
        return await _jump(read, shards, request)
    share = share_of(request.size, shards)
    page = await _keyset(read, shards, request, share)
    if page is None:  # a shard may have more rows inside the page than its share
        page = await _keyset(read, shards, request, request.size)
    assert page is not None  # every shard gave the whole page: nothing can be missing
    return page


async def _keyset(read: Round, shards: int, request: PageRequest, count: int) -> Page | None:
    """The page from one round in which each shard gives ``count`` rows; None when the merge
    cannot be shown to hold the page (:func:`regions.core.paging.covered`)."""
    n, cursor, every = request.size, request.cursor, range(shards)
    form: Form
    if not request.forward:
        form = ("bottom", count) if cursor is None else ("before", cursor.score, cursor.member, count)
        windows = await read([(s, form) for s in every])
        merged = list(merge_rows(windows))
        return backward_page(windows, n, merged) if covered(windows, [count] * shards, merged, n, False) else None
    form = ("slice", request.start, count) if cursor is None else ("after", cursor.score, cursor.member, count)
    windows = await read([(s, form) for s in every])
    merged = list(itertools.islice(merge_rows(windows), n))
    if not covered(windows, [count] * shards, merged, n, True):
        return None
    return forward_page(windows, n, lead=None if cursor is None else float(cursor.score), merged=merged)


async def _jump(read: Round, shards: int, request: PageRequest) -> Page:
    jump = RankJump(request.start, shards, request.size)
    while (asked := jump.samples()) is not None:
        jump.sampled(asked, await read([(s, ("at", *indices)) for s, indices in asked]))
    if jump.total is not None and request.start >= jump.total:
        return past_the_end(request.start, jump.total)
    if (plan := jump.plan()) is not None:
        start = plan.start
        windows = await read([
            (s, ("slice", 0, n) if start is None else ("from", start.score, start.member, n))
            for s, n in enumerate(plan.counts)
        ])  # fmt: skip
        if (page := jump.page(plan, windows)) is not None:
            return page
    return await _search(read, shards, request)


async def _search(read: Round, shards: int, request: PageRequest) -> Page:
    # The first round reads every shard's size and, as the first pivots, the entry at the index the
    # target has in each shard if players spread evenly over shards.
    guess = request.start // shards
    found = await read([(s, ("slice", guess, 1)) for s in range(shards)])
    search = RankSearch(request.start, [w.count for w in found], request.size)
    pivots = [(s, guess) for s in range(shards)] if search.searching() else None
    while pivots is not None:
        rows = [(s, i, w.rows[0]) for (s, i), w in zip(pivots, found, strict=True) if w.rows]
        counts = iter(
            await read([(o, ("around", r[1], r[0], 0)) for s, _, r in rows for o in range(shards) if o != s])
        )
        for s, i, row in rows:
            search.counted(row, [i if o == s else next(counts).rank for o in range(shards)])
        if (pivots := search.pivots()) is not None:
            found = await read([(s, ("slice", i, 1)) for s, i in pivots])
    if search.target >= search.total:
        return past_the_end(search.target, search.total)
    n, lower = min(MAX_COUNT, search.gap + request.size), search.lower
    form: Form = ("slice", 0, n) if lower is None else ("from", lower.score, lower.member, n)
    windows = await read([(s, form) for s in range(shards)])
    skip = max(0, request.start - sum(w.first for w in windows))
    return forward_page(windows, request.size, skip, None if lower is None else float(lower.score))
