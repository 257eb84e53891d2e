"""Keyset pages of a board in the Redis projection (the rules: :mod:`regions.core.paging`).

A page is one round of ``read_window`` calls, one per shard, at the same position: after or before
a cursor's (score, member), from a rank of one shard, from the first, or the last. A jump to a rank
of a sharded board first reads, in one call per shard, the entries at evenly spaced indices around
the shard's share of the rank, then the page from the sampled position the samples bound it by
(:class:`regions.core.rank_jump.RankJump`): two rounds as a rule, each call O(samples x log N) in
Redis, however deep the rank (one round when the rank is shallow). When the page read cannot be
shown whole (the board moved between the rounds), the position is searched by pivots instead
(:class:`regions.core.paging.RankSearch`: a pivot read by index, then the entries each other shard
ranks before it, in rounds, O(shards x log N) calls).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from regions.core.paging import Page, PageRequest, RankSearch, backward_page, forward_page, past_the_end
from regions.core.rank_jump import RankJump
from regions.core.reads import Window

Form = tuple[str | int, ...]  # a read_window form and its arguments
Round = Callable[[Sequence[tuple[int, Form]]], Awaitable[list[Window]]]  # one call per (shard, form)

MAX_COUNT = 100_000  # read_window's bound on the entries of one call


async def read_page(read: Round, shards: int, request: PageRequest) -> Page:
    """The page ``request`` asks for, read with ``read`` from a board of ``shards`` shards."""
    n, cursor = request.size, request.cursor
    every = range(shards)
    if not request.forward:
        forms: list[Form] = [("bottom", n) if cursor is None else ("before", cursor.score, cursor.member, n)]
        return backward_page(await read([(s, forms[0]) for s in every]), n)
    if cursor is not None:
        windows = await read([(s, ("after", cursor.score, cursor.member, n)) for s in every])
        return forward_page(windows, n, lead=float(cursor.score))
    if shards == 1 or request.start == 0:
        return forward_page(
            await read([(s, ("slice", request.start if shards == 1 else 0, n)) for s in every]), n
        )
    return await _jump(read, shards, request)


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
