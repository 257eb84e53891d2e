"""A board read whole in rank order (``RankReader.ranked_rows``, for the archive of a closed board):
each shard's rows read a part at a time, the shards' parts merged as Redis orders rows."""

from __future__ import annotations

import asyncio
import collections
import functools
import heapq
from collections.abc import AsyncIterator, Awaitable, Callable

from regions.core.reads import Row, Window, row_order

Slice = Callable[[int, int, int], Awaitable[Window]]  # (shard, first, count): those rows of the shard
Part = Callable[[int, int], Awaitable[Window]]  # (first, count) of one shard


class ShardRows:
    """One shard's rows in rank order, read ``size`` at a time."""

    def __init__(self, read: Part, size: int) -> None:
        self._read, self._size = read, size
        self._rows: collections.deque[Row] = collections.deque()
        self._next, self._done = 0, False

    async def fill(self) -> None:
        if self._done:
            return
        rows = (await self._read(self._next, self._size)).rows
        self._rows.extend(rows)
        self._next += len(rows)
        self._done = len(rows) < self._size

    def head(self) -> Row | None:
        return self._rows[0] if self._rows else None

    def take(self) -> Row:
        return self._rows.popleft()

    def buffered(self) -> bool:
        return bool(self._rows)


async def first_rows(read: Slice, shards: int, size: int) -> list[ShardRows]:
    """Every shard's first ``size`` rows, read at once."""
    found = [ShardRows(functools.partial(read, s), size) for s in range(shards)]
    await asyncio.gather(*(shard.fill() for shard in found))
    return found


async def merged_rows(shards: list[ShardRows], size: int) -> AsyncIterator[list[Row]]:
    """The shards' rows in rank order, ``size`` at a time (the last part may be shorter)."""
    heads = [(row_order(row), s) for s, shard in enumerate(shards) if (row := shard.head()) is not None]
    heapq.heapify(heads)
    part: list[Row] = []
    while heads:
        _, s = heapq.heappop(heads)
        part.append(shards[s].take())
        if not shards[s].buffered():
            await shards[s].fill()
        head = shards[s].head()
        if head is not None:
            heapq.heappush(heads, (row_order(head), s))
        if len(part) == size:
            yield part
            part = []
    if part:
        yield part
