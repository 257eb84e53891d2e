"""Which projection answers a read, and the micro-cache of hot top-K answers.

``REGIONAL`` reads this region's projection. ``HOME`` reads the board's home region's canonical
projection. Until the replicator and a second region exist, every board's home projection is the
one in this region's Redis, so both scopes read the same reader; ``asOf.region`` names the region
whose projection answered, so a response never claims to come from a projection it did not read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from gateway import metrics
from gateway.core.ttl_cache import TtlCache
from regions.core.boards import Board
from regions.core.reads import AsOf, PlayerContext, RankedEntry, RankPage, Scope
from regions.redis_reads import RankReader

TopKey = tuple[str, str, int]  # region, board, k


class Projections:
    def __init__(
        self,
        region: str,
        local: RankReader,
        top_ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._region = region
        self._readers = {region: local}
        self._top: TtlCache[TopKey, tuple[int, RankPage]] = TtlCache(top_ttl_s, max_entries=4096)
        self._inflight: dict[TopKey, asyncio.Future[RankPage]] = {}
        self._generations: dict[str, int] = {}
        self._clock = clock

    def generation(self, board_id: str) -> int:
        """How many hints said the board changed since this process started."""
        return self._generations.get(board_id, 0)

    def changed(self, board_id: str) -> None:
        """A hint said the board changed: cached pages read before it are not served again."""
        self._generations[board_id] = self._generations.get(board_id, 0) + 1

    def _route(self, board: Board, scope: Scope) -> tuple[str, RankReader]:
        if scope is Scope.HOME and board.home_region in self._readers:
            return board.home_region, self._readers[board.home_region]
        return self._region, self._readers[self._region]

    async def top(self, board: Board, k: int, scope: Scope) -> RankPage:
        """Top ``k``; a page read less than the cache's TTL ago, and since the board's last hint,
        is reused with its own asOf."""
        region, reader = self._route(board, scope)
        key, generation = (region, board.id, k), self._generations.get(board.id, 0)
        cached = self._top.get(key, self._clock())
        if cached is not None and cached[0] == generation:
            metrics.TOP_CACHE.labels("hit").inc()
            return cached[1]
        running = self._inflight.get(key)
        if running is not None:
            metrics.TOP_CACHE.labels("shared").inc()
            return await asyncio.shield(running)
        metrics.TOP_CACHE.labels("miss").inc()
        future = asyncio.ensure_future(reader.top(board, k))
        self._inflight[key] = future
        try:
            page = await asyncio.shield(future)
        finally:
            if self._inflight.get(key) is future:
                del self._inflight[key]
        if self._generations.get(board.id, 0) == generation:
            self._top.put(key, (generation, page), self._clock())
        return page

    async def player(self, board: Board, user_id: str, scope: Scope) -> tuple[RankedEntry | None, AsOf]:
        return await self._route(board, scope)[1].player(board, user_id)

    async def context(self, board: Board, user_id: str, around: int, scope: Scope) -> PlayerContext | None:
        return await self._route(board, scope)[1].context(board, user_id, around)

    async def player_count(self, board: Board, scope: Scope = Scope.HOME) -> int:
        return await self._route(board, scope)[1].player_count(board)
